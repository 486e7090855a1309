/**
 * The receiving side of a history transfer (transfer.ts dispatches its messages): it keeps the
 * state of the history coming to this device and decides what to answer. A chunk is opened under
 * the transfer key, chained to the chunk before, its records decoded, and a record whose text came
 * in pieces put together; an archive is downloaded and read frame by frame the same way.
 */
import { b64, unb64 } from '../bytes.js';
import { checkRecord } from './history-codec.js';
import type { ChatMessage } from './model.js';
import type { HistoryChunkPlain } from '../wire/plaintext.js';
import type { ReceiveState, TransferLink, TransferProgress } from './transfer-types.js';
import { isId16 } from '@svc/protocol';
import { sleep } from '../attachments/upload.js';
import { mergeRecords } from './merge.js';
import type { HistoryArchivePlain, HistoryDonePlain, HistoryOfferPlain, HistoryPlain } from '../wire/plaintext.js';
import { ArchiveReader, damaged, KIND_CHUNK, type Frame } from './transfer-archive.js';
import type { Freshness } from './transfer-fresh.js';
import { backoff, passing, why } from './transfer-retry.js';
import { ACK_AGAIN_MS, K_RECEIVE, type TransferEvent } from './transfer-types.js';
import { chainNext, chainStart, chunkAad, decodePayload, makeTag, openData, tagAad } from './transfer-wire.js';

/** A chunk read: its whole records, the record still in pieces after it, and the chain value after it. */
export interface OpenedChunk {
  records: ChatMessage[];
  /** Records of the chunk left out because they failed the check. */
  dropped: number;
  carry: ReceiveState['carry'];
  hash: string;
}

/** Reads chunk `p`, the one `r` expects next; a string says why it is refused. */
export async function openChunk(
  l: Pick<TransferLink, 'key' | 'me' | 'deviceId'>,
  r: ReceiveState,
  p: HistoryChunkPlain,
): Promise<OpenedChunk | string> {
  const sealed = unb64(p.data);
  const prev = unb64(r.hash);
  const bytes = await openData(l.key, chunkAad(l.me, p.transfer, l.deviceId, p.seq, p.total, prev), sealed);
  if (!bytes) return 'forged or damaged';
  const payload = decodePayload(bytes);
  if (!payload) return 'damaged';
  let records: ChatMessage[] = [];
  let dropped = 0;
  let carry = r.carry;
  if ('records' in payload) ({ records, dropped } = payload);
  else {
    const piece = payload.piece;
    const first = piece.rec !== undefined;
    if (first ? carry : !carry) return 'damaged';
    carry = first ? { rec: piece.rec!, text: piece.text } : { rec: carry!.rec, text: carry!.text + piece.text };
    if (piece.end) {
      const whole = carry.rec ? checkRecord({ ...carry.rec, body: carry.text }) : null;
      if (whole) records = [whole];
      else dropped = 1;
      carry = undefined;
    }
  }
  return { records, dropped, carry, hash: b64(await chainNext(prev, sealed)) };
}

/** Where a transfer this device receives stands. */
export function receiveProgress(r: ReceiveState, deviceId: string): TransferProgress {
  return {
    role: 'receive',
    transfer: r.transfer,
    device: deviceId,
    chunks: { done: r.next, total: r.total },
    records: { done: r.recordsDone, total: r.records },
    dropped: r.dropped ?? 0,
    state: r.done ? 'done' : 'active',
    ...(r.archive && r.archive.files > 0 ? { files: { done: r.archive.filesDone, total: r.archive.files } } : {}),
    ...(r.error ? { error: r.error } : {}),
  };
}

/** What the receiving side needs of the transfer it belongs to (transfer.ts). */
export interface ReceiverHost {
  /** Runs `f` after every change of state before it: the two sides share one order. */
  serial<T>(f: () => Promise<T>): Promise<T>;
  emit(e: TransferEvent): void;
  refuse(p: HistoryPlain, why: string): void;
}

/**
 * The side of a history transfer that takes a history sent to this device: chunks in order
 * through the outbox, or an archive downloaded from the attachment store, merged as they come.
 */
export class HistoryReceiver {
  private recv: ReceiveState | null = null;
  /**
   * The attachments named by live records this transfer merged: an archive's files are kept only
   * if one is (a file of a message deleted or expired since must not come back). Null after a
   * reload, when it is read from the store at the first file.
   */
  private liveFiles: Set<string> | null = null;
  /** Whether this device is downloading an archive now. */
  private fetching = false;

  constructor(
    private readonly l: TransferLink,
    private readonly fresh: Freshness,
    private readonly host: ReceiverHost,
  ) {}

  async read(): Promise<void> {
    this.recv = ((await this.l.store.getMeta(K_RECEIVE)) as ReceiveState | undefined) ?? null;
  }

  /** After a reload: an archive's download goes on; a paced transfer asks for the next chunk it expects. */
  async resume(): Promise<void> {
    if (this.recv?.archive) this.startFetch();
    else if (this.recv && !this.recv.done) await this.ack(this.recv, true);
  }

  progress(): TransferProgress | null {
    return this.recv ? receiveProgress(this.recv, this.l.deviceId) : null;
  }

  async cancel(transfer: string): Promise<void> {
    if (this.recv?.transfer !== transfer) return;
    this.recv = null;
    await this.l.store.removeMeta(K_RECEIVE);
    await this.fresh.finish(transfer);
  }

  async onOffer(p: HistoryOfferPlain): Promise<void> {
    if (this.fresh.isFinished(p.transfer)) return this.host.refuse(p, 'replayed');
    const cur = this.recv;
    // The first offer wins; another device's offer while it runs is left alone.
    if (cur && (cur.transfer === p.transfer || (!cur.done && !cur.error))) return;
    if (!(await this.fresh.take(p.nonce))) return this.host.refuse(p, 'not asked for');
    const r: ReceiveState = {
      transfer: p.transfer,
      total: p.total,
      records: p.records,
      next: 0,
      hash: b64(await chainStart(p.transfer)),
      recordsDone: 0,
      done: false,
    };
    await this.saveRecv(r);
  }

  async onChunk(p: HistoryChunkPlain): Promise<void> {
    if (this.fresh.isFinished(p.transfer)) return this.host.refuse(p, 'replayed');
    const r = this.recv;
    if (!r || r.transfer !== p.transfer) return this.host.refuse(p, 'no such transfer on this device');
    if (r.done || p.seq < r.next) return this.host.refuse(p, 'replayed');
    if (p.total !== r.total) return this.host.refuse(p, 'forged');
    if (p.seq > r.next) {
      this.host.refuse(p, 'out of order');
      return this.ack(r);
    }
    const opened = await openChunk(this.l, r, p);
    if (typeof opened === 'string') return this.host.refuse(p, opened);
    const next = await this.merge(r, opened);
    // The last chunk completes the transfer: each seal binds `total` and the chain before it, so
    // holding chunk total-1 is holding all of them, in order. The sender's `history-done` may be
    // held back a minute by its outbox's message budget (pacer.ts): the receiver does not wait
    // for it, and its ack lets the sender drop that `history-done` if it has not gone yet.
    if (next.next === next.total && !next.carry) {
      await this.fresh.finish(next.transfer);
      await this.saveRecv({ ...next, done: true });
      return this.ack(this.recv!);
    }
    await this.saveRecv(next);
  }

  /** Merges an opened chunk into the store: the state after it. */
  private async liveFileIds(): Promise<Set<string>> {
    this.liveFiles ??= liveAttachments(await this.l.store.all());
    return this.liveFiles;
  }

  private async merge(r: ReceiveState, opened: OpenedChunk): Promise<ReceiveState> {
    if (r.next === 0) this.liveFiles = new Set();
    for (const id of liveAttachments(opened.records)) this.liveFiles?.add(id);
    const merged = await mergeRecords(this.l.store, this.l.me, opened.records);
    this.l.notify({ changed: merged.changed, imported: merged.added });
    const next: ReceiveState = { ...r, next: r.next + 1, hash: opened.hash, recordsDone: r.recordsDone + opened.records.length + opened.dropped };
    if (opened.dropped > 0) next.dropped = (r.dropped ?? 0) + opened.dropped;
    if (opened.carry) next.carry = opened.carry;
    else delete next.carry;
    return next;
  }

  /** An archive for this device: taken like an offer (a request it waits on, not a finished transfer), then downloaded. */
  async onArchive(p: HistoryArchivePlain): Promise<void> {
    if (this.fresh.isFinished(p.transfer)) return this.host.refuse(p, 'replayed');
    const cur = this.recv;
    if (cur?.transfer === p.transfer) return;
    // While one runs, another archive for a request this device still waits on is left alone.
    if (cur && !cur.done && !cur.error) return this.fresh.waitsOn(p.nonce) ? undefined : this.host.refuse(p, 'not asked for');
    if (!this.l.archive) return this.host.refuse(p, 'no attachment store here');
    if (!(await this.fresh.take(p.nonce))) return this.host.refuse(p, 'not asked for');
    await this.saveRecv({
      transfer: p.transfer,
      total: p.total,
      records: p.records,
      next: 0,
      hash: b64(await chainStart(p.transfer)),
      recordsDone: 0,
      done: false,
      archive: { parts: p.parts, digest: p.digest, files: p.files, filesDone: 0, offset: 0 },
    });
    this.startFetch();
  }

  /** Downloads the archive being received from where it stands, in the background. */
  private startFetch(): void {
    const r = this.recv;
    if (this.fetching || !r?.archive || r.done || r.error || !this.l.archive) return;
    this.fetching = true;
    void this.fetchArchive(r.transfer).finally(() => (this.fetching = false));
  }

  private async fetchArchive(transfer: string): Promise<void> {
    const signal = this.l.archive!.signal;
    for (let attempt = 0; ; attempt++) {
      const r = this.recv;
      if (!r || r.transfer !== transfer || r.done || r.error || signal?.aborted) return;
      try {
        return await this.readArchive(r);
      } catch (e) {
        if (signal?.aborted) return;
        if (passing(e)) {
          await sleep(backoff(attempt), signal).catch(() => undefined);
          continue;
        }
        // Damaged, altered or gone: the transfer stops here, with what it took so far (each chunk checked).
        return this.host.serial(async () => {
          const cur = this.recv;
          if (cur?.transfer !== transfer || cur.done) return;
          this.host.emit({ type: 'refused', kind: 'history-archive', transfer, why: why(e) });
          await this.fresh.finish(transfer);
          await this.saveRecv({ ...cur, error: why(e) });
        });
      }
    }
  }

  /** Reads the archive from the frame after the last one taken (its attachment is downloaded again from its start). */
  private async readArchive(r: ReceiveState): Promise<void> {
    const a = this.l.archive!;
    const arc = r.archive!;
    const size = arc.parts.reduce((n, p) => n + p.plainSize, 0);
    const reader = new ArchiveReader(size);
    let i = 0;
    let base = 0;
    while (i < arc.parts.length && base + arc.parts[i]!.plainSize <= arc.offset) base += arc.parts[i++]!.plainSize;
    let skip = arc.offset - base;
    let offset = arc.offset;
    for (; i < arc.parts.length; i++) {
      for await (let piece of a.download(arc.parts[i]!)) {
        if (skip > 0) {
          const k = Math.min(skip, piece.length);
          skip -= k;
          piece = piece.subarray(k);
        }
        for (const f of reader.push(piece)) {
          offset += f.spanned;
          if (!(await this.host.serial(() => this.takeFrame(r.transfer, f, offset)))) return;
        }
      }
    }
    if (!reader.empty || offset !== size) throw damaged('it ends in the middle of a part');
    await this.host.serial(() => this.finishArchive(r.transfer));
  }

  /** One frame of the archive: a chunk merged, or a file kept. False when the transfer went away meanwhile. */
  private async takeFrame(transfer: string, f: Frame, offset: number): Promise<boolean> {
    const r = this.recv;
    if (!r?.archive || r.transfer !== transfer || r.done || r.error) return false;
    const arc = r.archive;
    if (f.kind === KIND_CHUNK) {
      if (r.next >= r.total) throw damaged('it holds more of the history than its message says');
      const p: HistoryChunkPlain = {
        v: 1,
        type: 'history-chunk',
        transfer,
        device: this.l.deviceId,
        seq: r.next,
        total: r.total,
        data: b64(f.data),
        sentAt: 0,
      };
      const opened = await openChunk(this.l, r, p);
      if (typeof opened === 'string') throw damaged(`chunk ${r.next}: ${opened}`);
      await this.saveRecv({ ...(await this.merge(r, opened)), archive: { ...arc, offset } });
      return true;
    }
    if (r.next < r.total || r.carry) throw damaged('a file comes before the end of the history');
    if (arc.filesDone >= arc.files) throw damaged('it holds more files than its message says');
    if (!isId16(f.id)) throw damaged('a file in it has no valid name');
    if ((await this.liveFileIds()).has(f.id)) await this.l.archive?.kept?.put(f.id, f.bytes);
    await this.saveRecv({ ...r, archive: { ...arc, filesDone: arc.filesDone + 1, offset } });
    return true;
  }

  /** The whole archive is read: its chain must end where its message says. */
  private async finishArchive(transfer: string): Promise<void> {
    const r = this.recv;
    if (!r?.archive || r.transfer !== transfer || r.done) return;
    if (r.next !== r.total || r.carry || r.archive.filesDone !== r.archive.files) throw damaged('parts of it are missing');
    if (r.hash !== r.archive.digest) throw damaged('its chain does not end where its message says');
    await this.fresh.finish(transfer);
    await this.saveRecv({ ...r, done: true, confirmed: true });
    await this.ack(this.recv!);
  }

  /**
   * The sender's closing message. The receiver is done with the last chunk already (onChunk);
   * `history-done` then confirms the chain (its digest must be the receiver's chain value) once,
   * and a second one is a replay. One that comes before every chunk did asks for the missing one.
   */
  async onDone(p: HistoryDonePlain): Promise<void> {
    const r = this.recv;
    if (!r || r.transfer !== p.transfer) return this.host.refuse(p, 'no such transfer on this device');
    if (r.confirmed) return this.host.refuse(p, 'replayed');
    if (p.total !== r.total) return this.host.refuse(p, 'forged');
    if (r.next < r.total) {
      this.host.refuse(p, 'chunks missing');
      return this.ack(r);
    }
    if (p.digest !== r.hash) return this.host.refuse(p, 'forged');
    await this.saveRecv({ ...r, done: true, confirmed: true });
  }

  /** Acknowledges the next chunk `r` expects (not the same one twice within ACK_AGAIN_MS, unless `force`). */
  private async ack(r: ReceiveState, force = false): Promise<void> {
    const now = this.l.now();
    const next = r.done ? r.total : r.next;
    if (!force && r.lastAck?.next === next && now - r.lastAck.at < ACK_AGAIN_MS) return;
    await this.saveRecv({ ...r, lastAck: { next, at: now } }, false);
    const a = { type: 'history-ack' as const, transfer: r.transfer, device: this.l.deviceId, next };
    await this.l.enqueue(await this.l.carrier(), { ...a, tag: await makeTag(this.l.key, tagAad(this.l.me, a)), sentAt: 0 });
  }

  private async saveRecv(r: ReceiveState, tell = true): Promise<void> {
    await this.l.store.putMeta(K_RECEIVE, r);
    this.recv = r;
    if (tell) this.host.emit({ type: 'progress', progress: receiveProgress(r, this.l.deviceId) });
  }
}

/** The attachments that live records name (not deleted, not expired). */
export function liveAttachments(records: readonly ChatMessage[]): Set<string> {
  const out = new Set<string>();
  for (const m of records) if (m.attachment && !m.deleted && !m.expired) out.add(m.attachment.id);
  return out;
}
