/**
 * The history as an archive, on the sending side (transfer.ts keeps the sends and decides when):
 * the records sealed and chained like the chunks of the paced transfer, with the files kept here
 * after them (transfer-archive.ts), uploaded in the background as attachments; once every part is
 * up, one message names them. After a reload the upload goes on (HistoryTransfer.load).
 */
import { sleep } from '../attachments/upload.js';
import { b64, randomBytes, unb64 } from '../bytes.js';
import { SdkError } from '../errors.js';
import type { ChatMessage } from './model.js';
import { MAX_ARCHIVE_PARTS } from '../wire/plaintext.js';
import { ARCHIVE_CHUNK_BYTES, archiveBytes, archiveLength, keptFiles } from './transfer-archive.js';
import { K_CHUNKS, type SendState, type TransferEvent, type TransferLink, type TransferProgress, type TransferRequest } from './transfer-types.js';
import { backoff, passing, why } from './transfer-retry.js';
import { sendProgress } from './transfer-send.js';
import { buildTransfer, makeTag, tagAad } from './transfer-wire.js';

/** A send to record: paced, or with `archive`. */
export interface NewSend {
  transfer: string;
  device: string;
  chat: SendState['chat'];
  built: Awaited<ReturnType<typeof buildTransfer>>;
  dropped: number;
  archive?: SendState['archive'];
}

/** What the archive's side needs of the transfer it belongs to (transfer.ts). */
export interface ArchiveSenderHost {
  /** Runs `f` after every change of state before it. */
  serial<T>(f: () => Promise<T>): Promise<T>;
  emit(e: TransferEvent): void;
  /** Records a new send with its sealed chunks kept to resend from; its request is answered. */
  startSend(o: NewSend): Promise<SendState>;
  /** Whether `s` is still one of the sends (not cancelled or forgotten). */
  isSending(s: SendState): boolean;
  saveSends(): Promise<void>;
}

export class ArchiveSender {
  /** Transfers whose archive this device is uploading. */
  private readonly uploading = new Set<string>();

  constructor(
    private readonly l: TransferLink,
    private readonly host: ArchiveSenderHost,
  ) {}

  /** The largest attachment the service takes, or null when the history cannot go as an archive. */
  async maxBytes(): Promise<number | null> {
    try {
      return (await this.l.archive?.maxBytes()) ?? null;
    } catch {
      return null;
    }
  }

  /**
   * The history as an archive (transfer-archive.ts): sealed and chained like the chunks of the paced
   * transfer, with the files kept here after it, uploaded in the background; one message names it.
   */
  async send(ask: TransferRequest, chat: SendState['chat'], records: ChatMessage[], dropped: number, max: number): Promise<TransferProgress> {
    const a = this.l.archive!;
    const transfer = b64(randomBytes(16));
    const device = ask.device;
    const built = await buildTransfer({ key: this.l.key, nick: this.l.me, transfer, device, records, capacity: ARCHIVE_CHUNK_BYTES });
    const ids = new Set(records.flatMap((r) => (r.attachment ? [r.attachment.id] : [])));
    const files = a.kept && ids.size > 0 ? await keptFiles(a.kept, ids) : [];
    const length = archiveLength(
      built.chunks.map((c) => unb64(c.data).length),
      files,
    );
    const count = Math.ceil(length / max);
    if (count > MAX_ARCHIVE_PARTS) throw new SdkError('invalid', { message: 'The history and its files are too large to transfer.' });
    const parts: NonNullable<SendState['archive']>['parts'] = [];
    for (let i = 0; i < count; i++) {
      const plainSize = Math.min(max, length - i * max);
      parts.push({ ...(await a.create(plainSize)), plainSize, start: i * max });
    }
    const archive = { nonce: ask.nonce, records: records.length, files, parts, pointed: false };
    const s = await this.host.startSend({ transfer, device, chat, built, dropped, archive });
    this.startUpload(s);
    const p = sendProgress(s);
    this.host.emit({ type: 'progress', progress: p });
    return p;
  }

  /** Uploads what of an archive the service does not hold yet, then queues its message; in the background. */
  startUpload(s: SendState): void {
    if (!s.archive || s.archive.pointed || s.confirmed || s.error || this.uploading.has(s.transfer) || !this.l.archive) return;
    this.uploading.add(s.transfer);
    void this.upload(s).finally(() => this.uploading.delete(s.transfer));
  }

  private async upload(s: SendState): Promise<void> {
    const a = this.l.archive!;
    const arc = s.archive!;
    const stored = (await this.l.store.getMeta(K_CHUNKS + s.transfer)) as string[] | undefined;
    if (!stored) return;
    const chunks = stored.map((d) => unb64(d));
    for (let attempt = 0; ; attempt++) {
      if (a.signal?.aborted || !this.host.isSending(s)) return;
      try {
        for (const p of arc.parts) {
          if (p.sha256) continue;
          const up = await a.upload(p, () => archiveBytes(chunks, arc.files, a.kept, p.start, p.start + p.plainSize));
          attempt = 0;
          await this.host.serial(async () => {
            Object.assign(p, up);
            await this.host.saveSends();
          });
        }
        await this.host.serial(() => this.point(s));
        return;
      } catch (e) {
        if (a.signal?.aborted || !this.host.isSending(s)) return;
        if (!passing(e)) {
          await this.host.serial(async () => {
            s.error = `The history could not be sent: ${why(e)}`;
            await this.host.saveSends();
            this.host.emit({ type: 'progress', progress: sendProgress(s) });
          });
          return;
        }
        await sleep(backoff(attempt), a.signal).catch(() => undefined);
      }
    }
  }

  /** Every attachment of the archive is uploaded: the one message that names them goes. */
  private async point(s: SendState): Promise<void> {
    const arc = s.archive!;
    if (arc.pointed || !this.host.isSending(s)) return;
    const msg = {
      type: 'history-archive' as const,
      transfer: s.transfer,
      device: s.device,
      nonce: arc.nonce,
      total: s.total,
      records: arc.records,
      digest: s.digest,
      files: arc.files.length,
      parts: arc.parts.map((p) => ({ id: p.id, key: p.key, sha256: p.sha256!, size: p.size!, plainSize: p.plainSize })),
    };
    await this.l.enqueue(s.chat, { ...msg, tag: await makeTag(this.l.key, tagAad(this.l.me, msg)), sentAt: 0 });
    arc.pointed = true;
    await this.host.saveSends();
  }

  /** The archive's attachments are not needed any more: deleted from the service (best effort; they expire anyway). */
  discard(s: SendState): void {
    const a = this.l.archive;
    if (!a || !s.archive) return;
    for (const p of s.archive.parts) void a.discard(p.id).catch(() => undefined);
  }
}
