/**
 * The attachment store's rules: opaque ciphertext uploaded in numbered parts under a client-chosen
 * random id, finished with its part count, size and SHA-256 (which the service checks), read by
 * any signed-in account that holds the id, deleted by its uploader. The store keeps the bytes; the
 * rules, limits and the hash are here.
 */
import { createHash } from 'node:crypto';
import { ApiError, ATTACHMENT, type AttachmentInfo, type FinishAttachmentRequest } from '@svc/protocol';
import type { AttachmentConfig } from '../config.js';
import type { AttachmentRecord } from '../store/types.js';
import type { Caller, Deps } from './deps.js';

/** Parts read from the store at a time when hashing or serving: about 1 MB (fewer, larger reads and socket writes). */
const READ_BATCH = 42;

function settings(deps: Deps): AttachmentConfig {
  const a = deps.config.attachments;
  // The routes are not registered without the store; a call here is a wiring mistake.
  if (!a) throw new Error('attachments are off');
  return a;
}

const tooLarge = (a: AttachmentConfig): ApiError =>
  new ApiError('file_too_large', { message: `An attachment may hold at most ${a.maxBytes} bytes of ciphertext.` });

/** Stores part `n` (its data decoded from base64url by the route's check). */
export async function putPart(deps: Deps, caller: Caller, id: string, n: number, data: Uint8Array): Promise<void> {
  const a = settings(deps);
  if (n * ATTACHMENT.partBytes + data.length > a.maxBytes) throw tooLarge(a);
  const parts = Math.floor(a.uploadBytesPerMin / ATTACHMENT.partBytes);
  const wait = await deps.limiter.hit(`upload:${caller.nick}`, parts, 60_000);
  if (wait > 0) throw new ApiError('rate_limited', { retryAfter: wait });
  // A remembered session (routes/index.ts) is confirmed by the part's own write.
  const session = caller.provisional ? { session: caller.sessionId } : {};
  const r = await deps.store.putAttachmentPart({ id, nick: caller.nick, n, data, now: deps.now(), quotaBytes: a.quotaBytes, ...session });
  if ('error' in r) throw new ApiError(r.error);
}

const info = (rec: AttachmentRecord): AttachmentInfo => ({ id: rec.id, size: rec.size!, finishedAt: rec.finishedAt! });

/** What is wrong with the stored parts against the finish's count and size, or null. */
function partsProblem(rec: AttachmentRecord, f: FinishAttachmentRequest): string | null {
  if (rec.parts.length !== f.parts || rec.parts.some((p, i) => p.n !== i)) {
    const missing = rec.parts.findIndex((p, i) => p.n !== i);
    return `Parts 0 to ${f.parts - 1} were stated; ${rec.parts.length} are stored${missing >= 0 ? `, part ${missing} is missing` : ''}.`;
  }
  const short = rec.parts.findIndex((p, i) => i < f.parts - 1 && p.bytes !== ATTACHMENT.partBytes);
  if (short >= 0) return `Part ${short} holds ${rec.parts[short]!.bytes} bytes; every part but the last holds ${ATTACHMENT.partBytes}.`;
  const total = rec.parts.reduce((s, p) => s + p.bytes, 0);
  return total === f.size ? null : `The parts hold ${total} bytes, not ${f.size}.`;
}

/** The SHA-256 of the stored parts, and with `keep` their bytes joined. */
async function readWhole(deps: Deps, id: string, parts: number, size: number, keep: boolean): Promise<{ sha256: Buffer; bytes: Buffer | null }> {
  const h = createHash('sha256');
  const kept: Uint8Array[] | null = keep ? [] : null;
  for (let from = 0; from < parts; from += READ_BATCH) {
    for (const part of await deps.store.readAttachmentParts(id, from, READ_BATCH)) {
      h.update(part);
      kept?.push(part);
    }
  }
  return { sha256: h.digest(), bytes: kept && Buffer.concat(kept, size) };
}

/**
 * Finishes an upload once its parts match the stated count, size and hash. Finishing again with
 * the same values answers the same; a part written while the hash was taken makes it start over.
 */
export async function finish(
  deps: Deps,
  caller: Caller,
  id: string,
  f: FinishAttachmentRequest,
): Promise<{ created: boolean; info: AttachmentInfo }> {
  const a = settings(deps);
  const stated = Buffer.from(f.sha256, 'base64url');
  for (let attempt = 0; attempt < 3; attempt++) {
    const rec = await deps.store.attachment(id);
    if (!rec) throw new ApiError('unknown_attachment');
    if (rec.uploader !== caller.nick) throw new ApiError('attachment_conflict');
    if (rec.finishedAt !== null) {
      const same = rec.size === f.size && rec.parts.length === f.parts && stated.equals(rec.sha256!);
      if (same) return { created: false, info: info(rec) };
      throw new ApiError('attachment_finished');
    }
    if (f.size > a.maxBytes) throw tooLarge(a);
    const problem = partsProblem(rec, f);
    if (problem) throw new ApiError('attachment_mismatch', { message: problem });
    const keep = deps.attachmentCache.reserve(f.size);
    try {
      const whole = await readWhole(deps, id, f.parts, f.size, keep);
      if (!stated.equals(whole.sha256))
        throw new ApiError('attachment_mismatch', { message: 'The SHA-256 of the stored parts is not the one stated.' });
      const now = deps.now();
      if ((await deps.store.finishAttachment({ id, nick: caller.nick, version: rec.version, size: f.size, sha256: stated, now })) === 'finished') {
        if (whole.bytes) deps.attachmentCache.put(id, stated, whole.bytes);
        return { created: true, info: { id, size: f.size, finishedAt: now } };
      }
    } finally {
      if (keep) deps.attachmentCache.release(f.size);
    }
  }
  throw new ApiError('attachment_mismatch', { message: 'Parts were written while the finish checked them; finish again once they are all up.' });
}

export interface Download {
  size: number;
  /** Where the body starts (a `Range: bytes=N-` request), and its bytes from there on. */
  start: number;
  body: AsyncIterable<Uint8Array>;
}

/**
 * A finished attachment's ciphertext, from byte `from` on (0 when the range is absent or past the
 * end): from memory when this instance finished or served it lately, else from the store.
 */
export async function download(deps: Deps, id: string, from: number | null): Promise<Download> {
  settings(deps);
  const rec = await deps.store.attachment(id);
  if (!rec || rec.finishedAt === null) {
    deps.attachmentCache.drop(id);
    throw new ApiError('unknown_attachment');
  }
  const size = rec.size!;
  const start = from !== null && from < size ? from : 0;
  const cached = deps.attachmentCache.get(id, rec.sha256!);
  const body = cached ? oneChunk(cached.subarray(start)) : parts(deps, rec, start);
  return { size, start, body };
}

/** The same bytes as a Buffer, not copied. */
const asBuffer = (b: Uint8Array): Buffer => (Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength));

async function* oneChunk(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

async function* parts(deps: Deps, rec: AttachmentRecord, start: number): AsyncIterable<Uint8Array> {
  const { id } = rec;
  const count = rec.parts.length;
  const first = Math.floor(start / ATTACHMENT.partBytes);
  let skip = start - first * ATTACHMENT.partBytes;
  // A whole file the cache would keep is kept once it has all been read: the next member's
  // download of a room's photo comes from memory.
  const size = rec.size!;
  const keep: Buffer[] | null = start === 0 && deps.attachmentCache.reserve(size) ? [] : null;
  // Ended by the loop, or by the stream's end when the client goes away (Readable.from calls return()).
  try {
    const read = (n: number) => (n < count ? deps.store.readAttachmentParts(id, n, READ_BATCH) : Promise.resolve([]));
    // The next batch is read while this one is written to the socket.
    let next = read(first);
    for (let n = first; n < count; n += READ_BATCH) {
      const batch = await next;
      // Deleted or purged while it was being read: the response ends short, and the client's
      // check of the size and hash refuses it.
      if (batch.length === 0) return;
      next = read(n + READ_BATCH);
      // Not awaited if the response ends first (the client went away); its failure is the next read's.
      next.catch(() => undefined);
      // One write of the batch's bytes, not one a part: a stream's cost is per chunk, not per byte.
      const bytes = batch.length === 1 ? asBuffer(batch[0]!) : Buffer.concat(batch);
      keep?.push(bytes);
      yield skip > 0 ? bytes.subarray(skip) : bytes;
      skip = 0;
      if (batch.length < READ_BATCH) break;
    }
    if (keep) {
      const whole = Buffer.concat(keep);
      if (whole.length === size) deps.attachmentCache.put(id, Buffer.from(rec.sha256!), whole);
    }
  } finally {
    if (keep) deps.attachmentCache.release(size);
  }
}

export async function remove(deps: Deps, caller: Caller, id: string): Promise<void> {
  settings(deps);
  const r = await deps.store.deleteAttachment(id, caller.nick);
  if ('error' in r) throw new ApiError(r.error);
  deps.attachmentCache.drop(id);
}
