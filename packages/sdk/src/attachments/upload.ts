/**
 * Uploading a file: encrypt it a chunk at a time (crypto/file.ts), send the parts with a few in
 * flight (UPLOAD_IN_FLIGHT), then the finish with the part count, size and SHA-256 of the
 * ciphertext (hashed in order as it goes: WebCrypto has no incremental digest, so @noble/hashes
 * does it). The first part a pass sends goes alone: it makes the upload, or finds it finished.
 *
 * What happens to an upload that does not go through:
 * - the service's upload budget (parts a minute, from GET /api/config) is kept by a pacer, so the
 *   client never sends a part it knows would be refused; a 429 anyway (another device of the
 *   account) waits its Retry-After and sends the same part again;
 * - a network failure throws once the parts in flight have settled; run() again with the same
 *   state resumes after the last part recorded in the progress store, re-encrypting the earlier
 *   parts only to hash them. Parts are answered out of order, so the progress records only the
 *   parts up to the first one not yet answered (saved every few parts and when the upload fails,
 *   so after a reload a few may go twice: parts are idempotent);
 * - the progress lost (a reload before it was saved): the ciphertext is the same for the same key,
 *   so starting over under the same id is safe, and a finished upload answers its finish again;
 * - a file over the service's limit is refused before anything is sent.
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { ATTACHMENT, type AttachmentLimits } from '@svc/protocol';
import type { ApiClient } from '../api.js';
import { b64, randomBytes, unb64 } from '../bytes.js';
import { Pacer } from '../conversation/pacer.js';
import { cipherSize, chunkCount, importFileKey, maxPlainSize, newFileKey, sealChunk } from '../crypto/file.js';
import { isSdkError, SdkError } from '../errors.js';
import { plainChunks, type FileSource } from './source.js';

/** Where an upload stands; kept by the app (UploadProgressStore) so that a reload resumes it. */
export interface UploadState {
  /** The attachment id (id16). */
  id: string;
  /** The file key, b64url. */
  key: string;
  plainSize: number;
  /** Ciphertext bytes. */
  size: number;
  parts: number;
  /** Parts 0 to done − 1 were acknowledged (as last saved); parts after it may have been too. */
  done: number;
}

/** A finished upload: what the message carries. */
export interface UploadedFile {
  id: string;
  key: string;
  sha256: string;
  size: number;
  plainSize: number;
}

/** The app keeps upload progress here (sealed at rest: it holds the file key). */
export interface UploadProgressStore {
  get(id: string): Promise<UploadState | undefined>;
  put(s: UploadState): Promise<void>;
  remove(id: string): Promise<void>;
}

export class MemoryUploadProgress implements UploadProgressStore {
  private readonly map = new Map<string, UploadState>();
  async get(id: string): Promise<UploadState | undefined> {
    const s = this.map.get(id);
    return s ? { ...s } : undefined;
  }
  async put(s: UploadState): Promise<void> {
    this.map.set(s.id, { ...s });
  }
  async remove(id: string): Promise<void> {
    this.map.delete(id);
  }
}

/** Upload progress kept among a ConversationStore's named values (sealed by a store that seals). */
export function progressInMeta(store: {
  getMeta(k: string): Promise<unknown>;
  putMeta(k: string, v: unknown): Promise<void>;
  removeMeta(k: string): Promise<void>;
}): UploadProgressStore {
  const k = (id: string): string => `attachment-upload|${id}`;
  return {
    get: async (id) => (await store.getMeta(k(id))) as UploadState | undefined,
    put: (s) => store.putMeta(k(s.id), s),
    remove: (id) => store.removeMeta(k(id)),
  };
}

export interface UploadOptions {
  signal?: AbortSignal;
  /** Ciphertext bytes the service holds so far, of `total`. */
  onProgress?: (done: number, total: number) => void;
  /** The upload waits `ms` before its next request: to stay under the budget, or told by a 429. */
  onWait?: (ms: number, why: 'pacing' | 'rate_limited') => void;
}

/** The progress is saved after this many parts (and at the end): a resume sends at most these again, and those in flight. */
const SAVE_EVERY = 8;

/**
 * Parts an upload keeps in flight. One at a time, each part waits for its round trip and the
 * service's commit before the next leaves; four keep the service and the network busy
 * (docs/BENCHMARKS.md) and hold at most four parts in memory.
 */
export const UPLOAD_IN_FLIGHT = 4;

/** "25 MB" for the web app's "<name> is too large (limit 25 MB)". */
export function limitLabel(maxBytes: number): string {
  return maxBytes >= 2 ** 20 ? `${Math.floor(maxBytes / 2 ** 20)} MB` : `${maxBytes} bytes`;
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const stop = (): void => {
      clearTimeout(t);
      reject(signal!.reason as Error);
    };
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', stop);
      resolve();
    }, ms);
    signal?.addEventListener('abort', stop, { once: true });
  });
}

export class Uploader {
  /** One budget for every upload of this client: the service counts parts per account. */
  readonly pacer: Pacer;
  private known: AttachmentLimits | null = null;

  constructor(
    private readonly api: ApiClient,
    private readonly progress: UploadProgressStore = new MemoryUploadProgress(),
  ) {
    this.pacer = new Pacer(Number.MAX_SAFE_INTEGER, () => api.now(), 0);
  }

  /** The service's attachment limits (GET /api/config, read once). */
  async limits(): Promise<AttachmentLimits> {
    if (this.known) return this.known;
    const c = await this.api.config();
    if (!c.attachments) throw new SdkError('not_found', { status: 0, message: 'This service does not take files.' });
    this.known = c.attachments;
    this.pacer.setLimit(Math.floor(c.attachments.uploadBytesPerMin / ATTACHMENT.partBytes));
    return c.attachments;
  }

  /** The largest file the service takes (its limit is on the padded ciphertext). */
  async maxFileBytes(): Promise<number> {
    return maxPlainSize((await this.limits()).maxBytes);
  }

  /** Refuses a file over the service's limit before anything is sent: SdkError `file_too_large`. */
  async check(plainSize: number, name = 'The file'): Promise<void> {
    const l = await this.limits();
    if (plainSize > maxPlainSize(l.maxBytes))
      throw new SdkError('file_too_large', { status: 0, message: `${name} is too large (limit ${limitLabel(l.maxBytes)})` });
  }

  /** A new upload of `plainSize` bytes under a fresh id and key, checked against the limit and saved. */
  async begin(plainSize: number, name?: string): Promise<UploadState> {
    await this.check(plainSize, name);
    return this.create(plainSize);
  }

  /** A new upload, saved but not checked against the limit (queued offline: run() checks it). */
  async create(plainSize: number): Promise<UploadState> {
    const s = stateFor(b64(randomBytes(16)), b64(newFileKey()), plainSize);
    await this.progress.put(s);
    return s;
  }

  /** The saved state of upload `id`, or a fresh one from the start (the same key gives the same parts). */
  async resume(id: string, key: string, plainSize: number): Promise<UploadState> {
    return (await this.progress.get(id)) ?? stateFor(id, key, plainSize);
  }

  /** Sends what the service does not have yet and finishes; the saved progress is removed once finished. */
  async run(s: UploadState, source: FileSource, o: UploadOptions & { name?: string } = {}): Promise<UploadedFile> {
    await this.check(s.plainSize, o.name);
    try {
      return await this.pass(s, source, o);
    } catch (e) {
      // The service has fewer parts than the saved progress says (purged, or saved before a lost
      // answer): send them all again, once.
      if (!isSdkError(e, 'attachment_mismatch') && !isSdkError(e, 'unknown_attachment')) throw e;
      s.done = 0;
      await this.progress.put(s);
      return this.pass(s, source, o);
    }
  }

  /** Deletes an upload (finished or not) and forgets its progress; a missing one is already gone. */
  async discard(id: string): Promise<void> {
    await this.progress.remove(id);
    try {
      await this.api.deleteAttachment(id);
    } catch (e) {
      if (!isSdkError(e, 'unknown_attachment')) throw e;
    }
  }

  private async pass(s: UploadState, source: FileSource, o: UploadOptions): Promise<UploadedFile> {
    const key = await importFileKey(unb64(s.key, 32), 'encrypt');
    const hash = sha256.create();
    const from = s.done;
    /** Parts answered beyond the first one not yet answered (`s.done`). */
    const answered = new Set<number>();
    const inFlight = new Set<Promise<void>>();
    let saved = s.done;
    let finished = false;
    let failure: { error: unknown } | null = null;
    const held = () => Math.min(s.size, (s.done + answered.size) * ATTACHMENT.partBytes);
    let n = 0;
    for await (const chunk of plainChunks(source, s.plainSize)) {
      const part = await sealChunk(key, n, n === s.parts - 1, chunk);
      hash.update(part);
      if (n < from) o.onProgress?.(Math.min(s.size, (n + 1) * ATTACHMENT.partBytes), s.size);
      else if (!finished && !failure) {
        const i = n;
        const sent: Promise<void> = this.sendPart(s.id, i, part, o)
          .then(
            (already) => {
              if (already) finished = true;
              answered.add(i);
              while (answered.delete(s.done)) s.done++;
              o.onProgress?.(held(), s.size);
            },
            (error: unknown) => {
              failure ??= { error };
            },
          )
          .finally(() => inFlight.delete(sent));
        inFlight.add(sent);
        // The first part alone; then up to UPLOAD_IN_FLIGHT at once.
        while (inFlight.size >= (i === from ? 1 : UPLOAD_IN_FLIGHT)) await Promise.race(inFlight);
        if (s.done - saved >= SAVE_EVERY) {
          saved = s.done;
          await this.progress.put({ ...s });
        }
      }
      n++;
    }
    await Promise.all(inFlight);
    if (failure) {
      // What was answered before the failure is kept, so that a resume sends none of it again.
      await this.progress.put({ ...s }).catch(() => undefined);
      throw (failure as { error: unknown }).error;
    }
    await this.progress.put({ ...s });
    const sha = b64(hash.digest());
    await this.finish(s, sha, o);
    await this.progress.remove(s.id);
    return { id: s.id, key: s.key, sha256: sha, size: s.size, plainSize: s.plainSize };
  }

  /** One part, paced and sent again after a 429; true when the upload turns out finished already. */
  private async sendPart(id: string, n: number, part: Uint8Array, o: UploadOptions): Promise<boolean> {
    const data = b64(part);
    // A wait right after a 429 is its Retry-After; any other is the pacer's.
    let why: 'pacing' | 'rate_limited' = 'pacing';
    for (;;) {
      // Parts in flight share the budget: after a wait another part may have taken the slot, so look again.
      const wait = this.pacer.waitMs('user');
      if (wait > 0) {
        o.onWait?.(wait, why);
        await sleep(wait, o.signal);
        why = 'pacing';
        continue;
      }
      this.pacer.note();
      try {
        await this.api.uploadAttachmentPart(id, n, data, o.signal);
        return false;
      } catch (e) {
        if (isSdkError(e, 'rate_limited')) {
          // The pacer now waits for the Retry-After.
          this.pacer.refused(e.retryAfter ?? 1);
          why = 'rate_limited';
          continue;
        }
        if (isSdkError(e, 'network')) this.pacer.unnote();
        // Finished under this id before (an answer lost): the finish says whether it is this file.
        if (isSdkError(e, 'attachment_finished')) return true;
        throw e;
      }
    }
  }

  private async finish(s: UploadState, sha: string, o: UploadOptions): Promise<void> {
    for (;;) {
      try {
        await this.api.finishAttachment(s.id, { parts: s.parts, size: s.size, sha256: sha });
        return;
      } catch (e) {
        if (!isSdkError(e, 'rate_limited')) throw e;
        o.onWait?.((e.retryAfter ?? 1) * 1000, 'rate_limited');
        await sleep((e.retryAfter ?? 1) * 1000, o.signal);
      }
    }
  }
}

function stateFor(id: string, key: string, plainSize: number): UploadState {
  return { id, key, plainSize, size: cipherSize(plainSize), parts: chunkCount(plainSize), done: 0 };
}
