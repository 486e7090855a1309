/**
 * History on every device: the account's devices move the history end to end (docs/CRYPTO.md,
 * "History transfer"). A new device asks (`history-request`); on another device the person says
 * "Send history", and that device offers (`history-offer`), sends the chunks (`history-chunk`)
 * through the outbox at priority 'bulk' (so they share the message budget and the person's own
 * messages go first), and closes with `history-done`. The receiver takes chunks only in order,
 * each sealed under the account's transfer key and chained to the one before, merges each into
 * the store as it arrives, and acknowledges (`history-ack`) the next chunk it expects: when it
 * resumes after a reload, when a chunk is missing, and once it holds all of them (with the last
 * chunk, not waiting for `history-done`, which the sender's budget may hold back).
 *
 * This file holds the sending side and passes what a receiver takes to transfer-receive.ts; a
 * history sent as an archive is uploaded by transfer-archive-send.ts.
 * Everything travels in the account's private room (transfer-link.ts), so the service relays
 * ciphertext between the account's own devices only. Both sides keep their state in the store
 * (getMeta/putMeta, transfer-types.ts), so a reload or a dropped connection on either side resumes.
 * What the service replays is refused (transfer-fresh.ts): a request carries a fresh nonce that
 * the offer echoes, a finished transfer stays finished, and a request shows only for a device the
 * service lists now.
 */
import { isDeviceId } from '@svc/protocol';
import { b64, randomBytes } from '../bytes.js';
import { SdkError } from '../errors.js';
import type { HistoryMessage } from './changes.js';
import { checkedRecords, isSettled } from './history-codec.js';
import type { OutboxItem } from './model.js';
import type { HistoryPlain, HistoryRequestPlain } from '../wire/plaintext.js';
import { ArchiveSender, type NewSend } from './transfer-archive-send.js';
import {
  ACK_AGAIN_MS,
  K_CHUNKS,
  K_REQUESTS,
  K_SENDS,
  TRANSFER_KEEP_MS,
  type SendState,
  type TransferEvent,
  type TransferLink,
  type TransferProgress,
  type TransferRequest,
} from './transfer-types.js';
import { Freshness } from './transfer-fresh.js';
import { HistoryReceiver } from './transfer-receive.js';
import { dropQueued, queueChunks, sendProgress } from './transfer-send.js';
import { buildTransfer, checkTag, makeTag, tagAad } from './transfer-wire.js';

export class HistoryTransfer {
  private sends: SendState[] = [];
  /** The side that takes a history sent to this device. */
  private readonly receiver: HistoryReceiver;
  /** The side that sends a history as an archive. */
  private readonly archives: ArchiveSender;
  private asks: TransferRequest[] = [];
  private readonly listeners = new Set<(e: TransferEvent) => void>();
  private queue: Promise<unknown> = Promise.resolve();
  private readonly fresh: Freshness;

  constructor(private readonly l: TransferLink) {
    this.fresh = new Freshness(l.store, () => l.now());
    this.receiver = new HistoryReceiver(l, this.fresh, {
      serial: (f) => this.serial(f),
      emit: (e) => this.emit(e),
      refuse: (p, why) => this.refuse(p, why),
    });
    this.archives = new ArchiveSender(l, {
      serial: (f) => this.serial(f),
      emit: (e) => this.emit(e),
      startSend: (o) => this.startSend(o),
      isSending: (s) => this.sends.includes(s),
      saveSends: () => this.saveSends(),
    });
  }

  on(f: (e: TransferEvent) => void): () => void {
    this.listeners.add(f);
    return () => this.listeners.delete(f);
  }

  private emit(e: TransferEvent): void {
    for (const f of this.listeners) f(e);
  }

  /**
   * One change of state at a time (received messages, outbox reports and the person's actions
   * interleave), each on the state kept from before a reload: it is read before the first.
   */
  private serial<T>(f: () => Promise<T>): Promise<T> {
    const g = async (): Promise<T> => {
      if (!this.loaded) await this.read();
      return f();
    };
    const run = this.queue.then(g, g);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private loaded = false;

  private async read(): Promise<void> {
    this.sends = ((await this.l.store.getMeta(K_SENDS)) as SendState[] | undefined) ?? [];
    await this.receiver.read();
    // A request kept from before requests had a nonce cannot be answered: its device asks again.
    this.asks = (((await this.l.store.getMeta(K_REQUESTS)) as TransferRequest[] | undefined) ?? []).filter((a) => typeof a.nonce === 'string');
    await this.fresh.read();
    this.loaded = true;
    for (const s of this.sends.filter((x) => x.createdAt + TRANSFER_KEEP_MS < this.l.now())) await this.forget(s);
  }

  /**
   * Resumes after a reload: a receiver in the middle of a transfer asks for the next chunk it
   * expects. Call it after the event stream's first `ready`, so that the chunks that waited in the
   * device's queue have been taken first (the state itself is read before the first message).
   */
  load(): Promise<void> {
    return this.serial(async () => {
      for (const s of this.sends) this.archives.startUpload(s);
      await this.receiver.resume();
    });
  }

  /** Where every transfer on this device stands. */
  progress(): TransferProgress[] {
    const out = this.sends.map((s) => sendProgress(s));
    const r = this.receiver.progress();
    if (r) out.push(r);
    return out;
  }

  /** Requests from new devices that wait for the person's answer ("Send history" / "Not now"). */
  get requests(): readonly TransferRequest[] {
    return this.asks;
  }

  /**
   * The requests to ask the person about now: those of devices the service lists now. A request
   * of a device it no longer lists is dropped; none shows while the list cannot be read.
   */
  pendingRequests(): Promise<TransferRequest[]> {
    return this.serial(async () => {
      if (this.asks.length === 0) return [];
      const listed = await this.listed();
      if (!listed) return [];
      for (const a of this.asks.filter((x) => !listed.includes(x.device))) await this.dropRequest(a.device);
      return [...this.asks];
    });
  }

  // ---- the new device ----

  /** Asks the account's other devices for the history (the app calls it when this device is new). */
  async request(): Promise<void> {
    const chat = await this.l.carrier();
    const nonce = await this.serial(() => this.fresh.ask());
    // The history comes as an archive when this device and the service can take one.
    const archive = (await this.archives.maxBytes()) !== null;
    const p = { type: 'history-request' as const, device: this.l.deviceId, nonce, ...(archive ? { archive: true as const } : {}) };
    await this.l.enqueue(chat, { ...p, tag: await makeTag(this.l.key, tagAad(this.l.me, p)), sentAt: 0 });
  }

  // ---- a device that holds the history ----

  /** The person pressed "Send history" for `device`: the history as it stands now goes to it. */
  send(device: string): Promise<TransferProgress> {
    if (!isDeviceId(device) || device === this.l.deviceId)
      return Promise.reject(new SdkError('invalid', { message: 'Not another device of this account.' }));
    return this.serial(async () => {
      const ask = this.asks.find((a) => a.device === device);
      if (!ask) throw new SdkError('invalid', { message: 'No request from that device waits for an answer.' });
      const chat = await this.l.carrier();
      // Newest first: recent chats fill in first.
      const { records, dropped } = checkedRecords((await this.l.store.all()).filter(isSettled).reverse());
      const max = ask.archive ? await this.archives.maxBytes() : null;
      if (max !== null && records.length > 0) return this.archives.send(ask, chat, records, dropped, max);
      const transfer = b64(randomBytes(16));
      const built = await buildTransfer({ key: this.l.key, nick: this.l.me, transfer, device, records });
      const s = await this.startSend({ transfer, device, chat, built, dropped });
      const offer = { type: 'history-offer' as const, transfer, device, nonce: ask.nonce, total: built.total, records: records.length };
      await this.l.enqueue(chat, { ...offer, tag: await makeTag(this.l.key, tagAad(this.l.me, offer)), sentAt: 0 });
      await queueChunks(this.l, s, 0);
      const p = sendProgress(s);
      this.emit({ type: 'progress', progress: p });
      return p;
    });
  }

  /** Records a new send, paced or as an archive, with its sealed chunks kept to resend from; its request is answered. */
  private async startSend(o: NewSend): Promise<SendState> {
    const s: SendState = {
      transfer: o.transfer,
      device: o.device,
      chat: o.chat,
      total: o.built.total,
      counts: o.built.chunks.map((c) => c.records),
      digest: o.built.digest,
      ...(o.dropped > 0 ? { dropped: o.dropped } : {}),
      sent: 0,
      createdAt: this.l.now(),
      confirmed: false,
      ...(o.archive ? { archive: o.archive } : {}),
    };
    await this.l.store.putMeta(
      K_CHUNKS + o.transfer,
      o.built.chunks.map((c) => c.data),
    );
    this.sends.push(s);
    await this.saveSends();
    await this.dropRequest(o.device);
    return s;
  }

  /** The person pressed "Not now": nothing is sent. */
  decline(device: string): Promise<void> {
    return this.serial(() => this.dropRequest(device));
  }

  /** Stops a transfer on this device (either side) and forgets it. */
  cancel(transfer: string): Promise<void> {
    return this.serial(async () => {
      const s = this.sends.find((x) => x.transfer === transfer);
      if (s) await this.forget(s);
      await this.receiver.cancel(transfer);
    });
  }

  /** The outbox reports a message the service accepted (Conversations.onSent). */
  sent(item: OutboxItem): Promise<void> {
    const p = item.plain;
    if (p.type !== 'history-chunk' && p.type !== 'history-archive') return Promise.resolve();
    return this.serial(async () => {
      const s = this.sends.find((x) => x.transfer === p.transfer);
      const seq = p.type === 'history-archive' ? (s?.total ?? 0) : p.seq + 1;
      if (!s || seq <= s.sent) return;
      s.sent = seq;
      await this.saveSends();
      this.emit({ type: 'progress', progress: sendProgress(s) });
    });
  }

  // ---- messages of the transfer (Conversations.handleHistory) ----

  handle(d: HistoryMessage): Promise<void> {
    return this.serial(async () => {
      const p = d.plain;
      if (d.from !== this.l.me || !this.l.isCarrier(d.chat)) return this.refuse(p, 'not from a device of this account');
      // Messages about another device's transfer pass by (every device of the account gets them).
      if (p.type === 'history-request') {
        if (p.device === this.l.deviceId) return;
      } else if (p.type === 'history-ack') {
        if (!this.sends.some((s) => s.transfer === p.transfer && s.device === p.device)) return;
      } else if (p.device !== this.l.deviceId) return;
      if (p.type !== 'history-chunk' && !(await checkTag(this.l.key, tagAad(this.l.me, p), p.tag))) return this.refuse(p, 'forged');
      switch (p.type) {
        case 'history-request':
          return this.onRequest(p, { device: p.device, nonce: p.nonce, at: d.ts, ...(p.archive ? { archive: true as const } : {}) });
        case 'history-archive':
          return this.receiver.onArchive(p);
        case 'history-offer':
          return this.receiver.onOffer(p);
        case 'history-chunk':
          return this.receiver.onChunk(p);
        case 'history-done':
          return this.receiver.onDone(p);
        case 'history-ack':
          return this.onAck(p.transfer, p.next);
      }
    });
  }

  private refuse(p: HistoryPlain, why: string): void {
    this.emit({
      type: 'refused',
      kind: p.type,
      ...('transfer' in p ? { transfer: p.transfer } : {}),
      ...(p.type === 'history-chunk' ? { seq: p.seq } : {}),
      why,
    });
  }

  /**
   * A request is kept until the person answers, and shown only while the service lists its
   * device; one kept while the list cannot be read shows at the next pendingRequests().
   */
  private async onRequest(p: HistoryRequestPlain, r: TransferRequest): Promise<void> {
    if (this.fresh.wasAnswered(r.nonce) || this.asks.some((a) => a.nonce === r.nonce)) return this.refuse(p, 'replayed');
    // A device that asks again gave up on an archive sent to it (it was refused there): it is forgotten.
    for (const s of this.sends.filter((x) => x.device === r.device && x.archive && !x.confirmed)) await this.forget(s);
    if (this.sends.some((s) => s.device === r.device && !s.confirmed)) return;
    this.asks = [...this.asks.filter((a) => a.device !== r.device), r];
    await this.l.store.putMeta(K_REQUESTS, this.asks);
    const listed = await this.listed();
    if (!listed) return;
    if (!listed.includes(r.device)) {
      await this.dropRequest(r.device);
      return this.refuse(p, 'not a device of this account');
    }
    this.emit({ type: 'request', request: r });
  }

  private async onAck(transfer: string, next: number): Promise<void> {
    const s = this.sends.find((x) => x.transfer === transfer)!;
    const now = this.l.now();
    if (next >= s.total) {
      if (s.confirmed) return;
      s.confirmed = true;
      await dropQueued(this.l, s);
      await this.l.store.removeMeta(K_CHUNKS + transfer);
      await this.saveSends();
      this.archives.discard(s);
      this.emit({ type: 'progress', progress: sendProgress(s) });
      return;
    }
    // An archive goes whole: only its end is acknowledged.
    if (s.archive) return;
    if (s.confirmed || (s.lastAck?.next === next && now - s.lastAck.at < ACK_AGAIN_MS)) return;
    s.lastAck = { next, at: now };
    await this.saveSends();
    // What still waits in the outbox goes again in order, after the chunk the receiver lacks.
    await dropQueued(this.l, s);
    await queueChunks(this.l, s, next);
  }

  // ---- state ----

  private async forget(s: SendState): Promise<void> {
    this.archives.discard(s);
    await dropQueued(this.l, s);
    await this.l.store.removeMeta(K_CHUNKS + s.transfer);
    this.sends = this.sends.filter((x) => x !== s);
    await this.saveSends();
  }

  /** Forgets the device's request, answered or not; the same request coming again is a replay. */
  private async dropRequest(device: string): Promise<void> {
    await this.fresh.answer(this.asks.filter((a) => a.device === device).map((a) => a.nonce));
    this.asks = this.asks.filter((a) => a.device !== device);
    await this.l.store.putMeta(K_REQUESTS, this.asks);
  }

  /** The account's devices as the service lists them now; null when it cannot be read. */
  private async listed(): Promise<string[] | null> {
    try {
      return await this.l.devices();
    } catch {
      return null;
    }
  }

  private saveSends(): Promise<void> {
    return this.l.store.putMeta(K_SENDS, this.sends);
  }
}
