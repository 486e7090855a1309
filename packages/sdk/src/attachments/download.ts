/**
 * Downloading a file and checking it against its message: the ciphertext comes as a stream and
 * is opened a part at a time, so a 25 MiB file is never held as one string.
 *
 * - Each part's tag is checked under the file key with its index and last flag, so a part altered,
 *   swapped, dropped or cut off fails; the padding after the stated length must be zero bytes.
 *   A few parts are opened at once (WebCrypto works off the main thread) while the next ones
 *   arrive; their plaintext is handed out in order, each only once its own tag checked.
 * - The total size and the SHA-256 of the ciphertext must be those the message states; the last
 *   piece of the file is handed out only after both checked, so a consumer that waits for the end
 *   never holds a file that failed.
 * - A cut connection resumes with `Range: bytes=N-` from the byte it stopped at; a download that
 *   keeps ending early is refused as truncated.
 * - A 404 means the service no longer has it (deleted, or past its time to live): "File no longer
 *   available".
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { ATTACHMENT } from '@svc/protocol';
import type { ApiClient } from '../api.js';
import { b64, concat, unb64 } from '../bytes.js';
import type { AttachmentFields } from '../wire/attachment-plain.js';
import { CHUNK_BYTES, chunkCount, cipherSize, importFileKey, openChunk } from '../crypto/file.js';
import { isSdkError, SdkError } from '../errors.js';
import { sleep } from './upload.js';

/** What a download needs of the message. */
export type FileRef = Pick<AttachmentFields, 'id' | 'key' | 'sha256' | 'size' | 'plainSize'>;

export interface DownloadOptions {
  signal?: AbortSignal;
  /** Ciphertext bytes received so far, of `total`. */
  onProgress?: (done: number, total: number) => void;
  /** Attempts in a row that bring nothing new before the download gives up (5). */
  retries?: number;
}

const corrupt = (why: string): SdkError =>
  new SdkError('attachment_corrupt', { message: `This file did not pass its check (${why}): it was damaged or altered, and was not kept.` });

/** Parts being opened at once while the next ones arrive. */
const OPENING = 4;

export const fileGone = (): SdkError => new SdkError('unknown_attachment', { message: 'File no longer available.' });

/** The file's size as the response announces it: Content-Range's total for a 206, else Content-Length. */
function announcedTotal(res: Response): number | undefined {
  const m = res.status === 206 ? /\/(\d+)$/.exec(res.headers.get('content-range') ?? '') : null;
  const v = res.status === 206 ? m?.[1] : res.headers.get('content-length');
  return v === undefined || v === null ? undefined : Number(v);
}

/** The file's bytes in order, each piece checked; throws SdkError `attachment_corrupt`, `unknown_attachment` or `network`. */
export async function* downloadFile(api: ApiClient, ref: FileRef, o: DownloadOptions = {}): AsyncGenerator<Uint8Array> {
  if (ref.size !== cipherSize(ref.plainSize)) throw corrupt('its sizes do not agree');
  const key = await importFileKey(unb64(ref.key, 32), 'decrypt');
  const parts = chunkCount(ref.plainSize);
  const partLength = (n: number): number => (n < parts - 1 ? ATTACHMENT.partBytes : ref.size - (parts - 1) * ATTACHMENT.partBytes);
  const hash = sha256.create();
  const retries = o.retries ?? 5;
  let got = 0;
  /** The part being received. */
  let n = 0;
  let part = new Uint8Array(partLength(0));
  let fill = 0;
  let failures = 0;
  /** Parts received and being opened, in order: at most OPENING at once. */
  const opening: { n: number; plain: Promise<Uint8Array>; got: number }[] = [];
  let hashOk = true;

  /** The full part `n` is in: hashed in order, and its opening started. */
  const received = (): void => {
    const last = n === parts - 1;
    hash.update(part);
    if (last) hashOk = b64(hash.digest()) === ref.sha256;
    const plain = openChunk(key, n, last, part);
    // Looked at in order by `next`; a failure met earlier throws first, and this one must not go unhandled.
    plain.catch(() => undefined);
    opening.push({ n, plain, got });
    n++;
    if (n < parts) part = new Uint8Array(partLength(n));
    fill = 0;
  };

  /** The oldest part being opened, checked: its plaintext without the padding. */
  const next = async (): Promise<Uint8Array> => {
    const { n: i, plain: opened, got: at } = opening.shift()!;
    let plain: Uint8Array;
    try {
      plain = await opened;
    } catch {
      throw corrupt(`part ${i} failed its tag`);
    }
    const keep = Math.max(0, Math.min(plain.length, ref.plainSize - i * CHUNK_BYTES));
    for (let j = keep; j < plain.length; j++) if (plain[j] !== 0) throw corrupt('its padding is not empty');
    if (i === parts - 1 && !hashOk) throw corrupt('its SHA-256 is not the one in the message');
    o.onProgress?.(at, ref.size);
    return plain.subarray(0, keep);
  };

  while (n < parts) {
    if (failures > retries) throw corrupt('the download kept ending before the whole file came');
    if (failures > 0) await sleep(Math.min(2000, 200 * failures), o.signal);
    let res: Response;
    try {
      res = await api.downloadAttachment(ref.id, got, o.signal);
    } catch (e) {
      if (isSdkError(e, 'unknown_attachment')) throw fileGone();
      if (o.signal?.aborted || !(isSdkError(e, 'network') || isSdkError(e, 'internal')) || failures >= retries) throw e;
      failures++;
      continue;
    }
    const total = announcedTotal(res);
    if (total !== undefined && total !== ref.size) {
      await res.body?.cancel().catch(() => undefined);
      throw corrupt(`the service holds ${total} bytes, the message says ${ref.size}`);
    }
    // A 200 to a request from byte N sends the whole file again: skip what came already.
    let skip = res.status === 206 ? 0 : got;
    const before = got;
    const reader = res.body?.getReader();
    if (!reader) throw new SdkError('bad_response', { message: 'The download came without a body.' });
    try {
      for (;;) {
        const reading = reader.read();
        // While the next bytes are awaited, hand out the parts already opened, so a slow or
        // stalled connection does not hold back what came before it.
        const arrived = reading.then(
          () => true,
          () => true,
        );
        while (opening.length > 0) {
          const head = opening[0]!.plain.then(
            () => false,
            () => false,
          );
          if (await Promise.race([arrived, head])) break;
          const piece = await next();
          if (piece.length > 0) yield piece;
        }
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reading;
        } catch (cause) {
          if (o.signal?.aborted) throw cause;
          break; // a cut: resume from `got`
        }
        if (chunk.done) break;
        let v = chunk.value;
        if (skip > 0) {
          const s = Math.min(skip, v.length);
          skip -= s;
          v = v.subarray(s);
        }
        while (v.length > 0) {
          if (n >= parts) throw corrupt('the service sent more bytes than the file has');
          const take = Math.min(part.length - fill, v.length);
          part.set(v.subarray(0, take), fill);
          fill += take;
          got += take;
          v = v.subarray(take);
          if (fill === part.length) {
            received();
            if (opening.length >= OPENING) {
              const piece = await next();
              if (piece.length > 0) yield piece;
            }
          }
        }
      }
    } finally {
      await reader.cancel().catch(() => undefined);
    }
    failures = got > before ? 0 : failures + 1;
  }
  while (opening.length > 0) {
    const piece = await next();
    if (piece.length > 0) yield piece;
  }
}

/** The whole file as one array (checked like downloadFile). */
export async function downloadBytes(api: ApiClient, ref: FileRef, o: DownloadOptions = {}): Promise<Uint8Array> {
  const pieces: Uint8Array[] = [];
  for await (const p of downloadFile(api, ref, o)) pieces.push(p);
  return pieces.length === 1 ? pieces[0]! : concat(...pieces);
}
