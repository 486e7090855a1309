/** Attachment routes (docs/API.md): present unless the operator set ATTACHMENTS=off. */
import { Readable } from 'node:stream';
import { invalid, isId16 } from '@svc/protocol';
import * as attachments from '../domain/attachments.js';
import { createdOrOk, noContent } from '../http/reply.js';
import { callerOf, param, type RouteContext, type RouteHandlers } from './context.js';

/** A part number: a whole number written plainly (the size limit refuses one too high). */
const PART_NUMBER = /^(0|[1-9]\d{0,8})$/;

function attachmentId(ctx: RouteContext): string {
  const id = param(ctx, 'id');
  if (!isId16(id)) throw invalid('id');
  return id;
}

/** The start of a `Range: bytes=N-` request; any other range is answered whole, as HTTP allows. */
function rangeStart(header: string | undefined): number | null {
  const m = /^bytes=(\d{1,15})-$/.exec(header ?? '');
  return m ? Number(m[1]) : null;
}

export const attachmentRoutes: Pick<RouteHandlers, 'uploadAttachmentPart' | 'finishAttachment' | 'downloadAttachment' | 'deleteAttachment'> = {
  uploadAttachmentPart: async (ctx) => {
    const caller = callerOf(ctx);
    const { data } = ctx.body();
    const id = attachmentId(ctx);
    const n = param(ctx, 'n');
    if (!PART_NUMBER.test(n)) throw invalid('n');
    const bytes = Buffer.from(data, 'base64url');
    await attachments.putPart(ctx.deps, caller, id, Number(n), bytes);
    ctx.req.uploadedBytes = bytes.length;
    return noContent();
  },

  finishAttachment: async (ctx) => {
    const caller = callerOf(ctx);
    const f = ctx.body();
    const r = await attachments.finish(ctx.deps, caller, attachmentId(ctx), f);
    return createdOrOk(r.created, r.info);
  },

  downloadAttachment: async (ctx) => {
    callerOf(ctx);
    const d = await attachments.download(ctx.deps, attachmentId(ctx), rangeStart(ctx.req.headers.range));
    const reply = ctx.reply.header('content-type', 'application/octet-stream').header('accept-ranges', 'bytes');
    reply.header('content-length', String(d.size - d.start));
    if (d.start > 0) reply.code(206).header('content-range', `bytes ${d.start}-${d.size - 1}/${d.size}`);
    else reply.code(200);
    await reply.send(Readable.from(d.body, { objectMode: false }));
    return undefined;
  },

  deleteAttachment: async (ctx) => {
    await attachments.remove(ctx.deps, callerOf(ctx), attachmentId(ctx));
    return noContent();
  },
};
