/**
 * Files through the outbox, like text: sendFile() checks the file against the service's limit,
 * keeps it (AttachmentFiles), stores the record as "Sending" and queues the message marked
 * `uploading`; the upload runs here, one file at a time, and only once it has finished does the
 * outbox send the message, with the ciphertext's hash filled in. So a message with a file
 * survives going offline, a reload and a 429 and is sent once:
 * - offline, or the service failing: the upload waits and resumes (online() or a timer), from the
 *   parts the service already acknowledged;
 * - a reload: load() finds the queued item and its kept file, and resumes the upload;
 * - refused for good (over the quota, the file gone from the device): the message shows "Not sent"
 *   with the reason, and Retry tries again.
 * Deleting the message for everyone deletes the upload too; a delete that cannot reach the
 * service is kept and tried again.
 */
import type { ApiClient } from '../api.js';
import { b64 } from '../bytes.js';
import { safeFileName, safeMime, type PhotoFields, type VoiceFields } from '../wire/attachment-plain.js';
import type { ChatMessage } from '../conversation/model.js';
import type { Outbox } from '../conversation/outbox.js';
import { encodePlaintext, type AttachmentPlain } from '../wire/plaintext.js';
import type { ConversationStore } from '../conversation/store.js';
import { isSdkError, SdkError } from '../errors.js';
import type { ChatId } from '../envelopes.js';
import { downloadFile, type DownloadOptions, type FileRef } from './download.js';
import type { AttachmentFiles, KeptFile } from './files.js';
import { attachmentRecord } from './record.js';
import { sourceSize } from './source.js';
import { progressInMeta, Uploader } from './upload.js';

export interface SendFileInput {
  file: KeptFile;
  name: string;
  /** The file's MIME type (lower-cased, parameters dropped; application/octet-stream when absent or odd). */
  mime?: string;
  caption?: string;
  /** Makes it a photo. */
  photo?: PhotoFields;
  /** Makes it a voice message. */
  voice?: VoiceFields;
}

export interface AttachmentSenderDeps {
  api: ApiClient;
  store: ConversationStore;
  outbox: Outbox;
  files: AttachmentFiles | undefined;
  me: () => string;
  newMid: () => string;
  emit: (c: { added?: ChatMessage; changed: ChatMessage[] }) => void;
  onError?: (e: unknown) => void;
}

/** The hash is known once the upload finished; until then the queued message holds no valid one. */
const NO_HASH = '';
const K_DELETES = 'attachment-deletes';
const BACKOFF_MS = [1_000, 2_000, 5_000, 10_000, 30_000];
const PASSING = new Set(['network', 'internal', 'bad_response', 'unauthenticated', 'rate_limited']);

export class AttachmentSender {
  readonly uploader: Uploader;
  private running = false;
  private again = false;
  private stopped = false;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private failures = 0;
  private current: { attachmentId: string; ctrl: AbortController } | null = null;
  private readonly progress = new Set<(messageId: string, done: number, total: number) => void>();

  constructor(private readonly d: AttachmentSenderDeps) {
    this.uploader = new Uploader(d.api, progressInMeta(d.store));
  }

  /** Listens to upload progress: ciphertext bytes the service holds of `total`, per message id. */
  onProgress(f: (messageId: string, done: number, total: number) => void): () => void {
    this.progress.add(f);
    return () => this.progress.delete(f);
  }

  /** Queues a file, photo or voice message; it shows at once as "Sending". SdkError `file_too_large` before anything is sent. */
  async send(chat: ChatId, input: SendFileInput, o: { id: string; now: number; expire?: number }): Promise<ChatMessage> {
    const files = this.d.files;
    if (!files) throw new SdkError('not_ready', { message: 'Sending files needs a place to keep them (ConversationsOptions.files).' });
    const size = sourceSize(input.file);
    if (size === undefined) throw new SdkError('invalid', { message: 'A file to send must be a Blob or bytes.' });
    const name = safeFileName(input.name);
    try {
      await this.uploader.check(size, name);
    } catch (e) {
      // Offline, the limit is not known yet: the message is queued, and the upload checks it.
      if (!isSdkError(e, 'network')) throw e;
    }
    const s = await this.uploader.create(size);
    const common = { id: s.id, key: s.key, sha256: NO_HASH, size: s.size, plainSize: size, name, mime: safeMime(input.mime) };
    const caption = input.caption?.trim() ? { caption: input.caption } : {};
    const meta = { ...(o.expire ? { expire: o.expire } : {}), sentAt: o.now, mid: this.d.newMid() };
    const plain: AttachmentPlain = input.photo
      ? { v: 1, type: 'photo', ...common, ...caption, ...input.photo, ...meta }
      : input.voice
        ? { v: 1, type: 'voice', ...common, ...caption, ...input.voice, ...meta }
        : { v: 1, type: 'file', ...common, ...caption, ...meta };
    // Refuses a malformed thumbnail or a caption too long for one message now, not after the upload.
    encodePlaintext({ ...plain, sha256: b64(new Uint8Array(32)) });
    await files.put(s.id, input.file);
    const rec: ChatMessage = { ...attachmentRecord({ id: o.id, chat, ts: o.now, from: this.d.me() }, plain), mid: meta.mid, state: 'queued' };
    if (o.expire) rec.seenAt = o.now;
    await this.d.store.put(rec);
    this.d.emit({ added: rec, changed: [] });
    const { v: _v, ...input2 } = plain;
    await this.d.outbox.add(chat, input2, { id: o.id, uploading: true });
    this.kick();
    return rec;
  }

  /** The file of an attachment record, checked piece by piece (download.ts). */
  download(ref: FileRef, o: DownloadOptions = {}): AsyncGenerator<Uint8Array> {
    return downloadFile(this.d.api, ref, o);
  }

  /** Starts what waits: uploads of queued messages, and deletions not yet done (after a reload). */
  async load(): Promise<void> {
    await this.retryDeletes();
    this.kick();
  }

  /** The connection is back: uploads and deletions go now. */
  online(): void {
    this.failures = 0;
    void this.retryDeletes();
    this.kick();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.current?.ctrl.abort();
  }

  /** A queued message with a file was deleted before it went: its upload stops and goes. */
  async cancel(attachmentId: string): Promise<void> {
    if (this.current?.attachmentId === attachmentId) this.current.ctrl.abort();
    await this.d.files?.remove(attachmentId);
    await this.remove(attachmentId);
  }

  /** Its message expired: the file this device kept for it (an upload not yet done) goes. */
  async forget(attachmentId: string): Promise<void> {
    if (this.current?.attachmentId === attachmentId) this.current.ctrl.abort();
    await this.d.files?.remove(attachmentId);
  }

  /** Deletes an attachment this account uploaded (its message was deleted for everyone); kept and retried when offline. */
  async remove(attachmentId: string): Promise<void> {
    const list = ((await this.d.store.getMeta(K_DELETES)) as string[] | undefined) ?? [];
    if (!list.includes(attachmentId)) await this.d.store.putMeta(K_DELETES, [...list, attachmentId]);
    await this.retryDeletes();
  }

  private async retryDeletes(): Promise<void> {
    const list = ((await this.d.store.getMeta(K_DELETES)) as string[] | undefined) ?? [];
    for (const id of list) {
      try {
        await this.uploader.discard(id);
      } catch (e) {
        // Another account's upload (a file passed on) is not this account's to delete.
        if (!isSdkError(e, 'not_uploader')) {
          if (!isSdkError(e) || !PASSING.has(e.code)) this.d.onError?.(e);
          continue;
        }
      }
      const now = ((await this.d.store.getMeta(K_DELETES)) as string[] | undefined) ?? [];
      await this.d.store.putMeta(
        K_DELETES,
        now.filter((x) => x !== id),
      );
    }
  }

  /** Starts the upload loop if it is not running (one upload at a time: they share one budget). */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.running = true;
    void this.pump()
      .catch((e: unknown) => this.d.onError?.(e))
      .finally(() => {
        this.running = false;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  private async pump(): Promise<void> {
    for (;;) {
      if (this.stopped) return;
      const item = this.d.outbox.pending.find((i) => i.uploading && i.state === 'waiting');
      if (!item) return;
      const p = item.plain as AttachmentPlain;
      const file = await this.d.files?.get(p.id);
      if (!file) {
        await this.d.outbox.update(item.id, (i) => {
          i.state = 'failed';
          i.note = 'The file is no longer on this device; attach it again.';
        });
        continue;
      }
      const ctrl = new AbortController();
      this.current = { attachmentId: p.id, ctrl };
      try {
        const s = await this.uploader.resume(p.id, p.key, p.plainSize);
        const up = await this.uploader.run(s, file, {
          name: p.name,
          signal: ctrl.signal,
          onProgress: (done, total) => {
            for (const f of this.progress) f(item.id, done, total);
          },
        });
        this.failures = 0;
        await this.finished(item.id, up.sha256);
        await this.d.files?.remove(p.id);
      } catch (e) {
        if (ctrl.signal.aborted) continue;
        if (!isSdkError(e) || PASSING.has(e.code)) {
          this.later(BACKOFF_MS[Math.min(this.failures++, BACKOFF_MS.length - 1)]!);
          return;
        }
        await this.d.outbox.update(item.id, (i) => {
          i.state = 'failed';
          i.note = e.message;
        });
      } finally {
        this.current = null;
      }
    }
  }

  /** The upload is done: the record and the queued message get the hash, and the message may go. */
  private async finished(messageId: string, sha256: string): Promise<void> {
    const rec = await this.d.store.get(messageId);
    if (rec?.attachment) {
      rec.attachment = { ...rec.attachment, sha256 };
      await this.d.store.put(rec);
      this.d.emit({ changed: [rec] });
    }
    await this.d.outbox.update(messageId, (i) => {
      i.plain = { ...(i.plain as AttachmentPlain), sha256 };
      delete i.uploading;
    });
  }

  private later(ms: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.kick();
    }, ms);
  }
}
