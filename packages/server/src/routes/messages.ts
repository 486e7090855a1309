/** Message routes (interface.md "Messages"): send with checks 1–2 here and 3–8 in the domain, and ack. */
import { LIMITS, invalid, isCt, isId16, isIv, isNick, isPlainObject, isUlid, type SendMessageRequest, type Target } from '@svc/protocol';
import * as messages from '../domain/messages.js';
import { parseJsonObject } from '../http/body.js';
import { accepted, noContent } from '../http/reply.js';
import { callerOf, type RouteHandlers } from './context.js';

/** Check 2: field shapes, in the order of the spec's list. */
function sendShape(b: Record<string, unknown>): SendMessageRequest {
  if (!isUlid(b.id)) throw invalid('id');
  const to = b.to;
  if (!isPlainObject(to) || ('dm' in to) === ('room' in to) || Object.keys(to).length !== 1) throw invalid('to');
  let target: Target;
  if ('dm' in to) {
    if (!isNick(to.dm)) throw invalid('to');
    if (b.keyId !== 'dm') throw invalid('keyId');
    target = { dm: to.dm };
  } else {
    if (!isId16(to.room)) throw invalid('to');
    if (!isId16(b.keyId)) throw invalid('keyId');
    target = { room: to.room };
  }
  if (!isIv(b.iv)) throw invalid('iv');
  if (!isCt(b.ct)) throw invalid('ct');
  return { id: b.id, to: target, keyId: b.keyId as string, iv: b.iv, ct: b.ct };
}

export const messageRoutes: RouteHandlers = {
  'POST /api/messages': async (ctx) => {
    const req = sendShape(parseJsonObject(ctx.req));
    return accepted(await messages.sendMessage(ctx.deps, callerOf(ctx), req));
  },

  'POST /api/ack': async (ctx) => {
    const b = parseJsonObject(ctx.req);
    const ids = b.ids;
    if (!Array.isArray(ids) || ids.length > LIMITS.ackBatch || !ids.every((x) => typeof x === 'string')) throw invalid('ids');
    // Only ULIDs can be queued: any other id is ignored like every id not in the queue, and never
    // reaches the store (PostgreSQL would fail the whole statement on a U+0000 in it).
    await messages.ack(ctx.deps, callerOf(ctx), (ids as string[]).filter((id) => isUlid(id)));
    return noContent();
  },
};
