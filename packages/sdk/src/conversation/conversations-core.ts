/**
 * What Conversations (conversations.ts) is built on: its parts wired together (the outbox, the
 * room membership record, attachments, membership records from other devices, drafts, mutes), the
 * listeners, loading and stopping, and what changes the records without the person acting:
 * envelopes taken in (decrypted, then the rules of rules.ts), the outbox's reports on what it
 * sent, and disappearing messages whose timer ran out. conversations.ts adds what the person does
 * and sees.
 */
import type { Envelope } from '@svc/protocol';
import type { AttachmentFiles } from '../attachments/files.js';
import { AttachmentSender } from '../attachments/sender.js';
import { b64, randomBytes } from '../bytes.js';
import type { Messenger } from '../messenger.js';
import { splitChatId } from '../envelopes.js';
import type { ChatMessage, OutboxItem } from './model.js';
import { Outbox } from './outbox.js';
import { Pacer } from './pacer.js';
import { ChatMutes, moveReadMarker } from './chat-state.js';
import { expireDue, nextExpiry, trackExpiry, type Expired } from './disappearing.js';
import { Drafts } from './drafts.js';
import { isAttachmentPlain, isHistoryPlain, isRecordsPlain, type PlainInput } from '../wire/plaintext.js';
import { RecordTransfer } from './record-transfer.js';
import { RoomMembers } from './room-members.js';
import { ingest, type Ingested, type RuleContext } from './rules.js';
import type { ConversationStore } from './store.js';
import { messengerLink } from './transfer-link.js';
import type { TransferLink } from './transfer-types.js';
import type { Change, HistoryMessage } from './changes.js';
import { purgeExpired } from './waiting.js';

export interface ConversationsOptions {
  messenger: Messenger;
  store: ConversationStore;
  pacer?: Pacer;
  /** Overrides who is in a chat (rules.ts); by default a DM's two people and the room's members as last listed. */
  isMember?: (chat: string, nick: string) => boolean;
  /** How long an unannounced member stays listed before the membership status warns (room-members.ts). */
  warnAfterMs?: number;
  /** Told about what failed in the background of the membership record and of attachments. */
  onError?: (e: unknown) => void;
  /** Where files wait until their upload finished (needed by sendFile). */
  files?: AttachmentFiles;
  /** How long a room's record may be missing before the account's other devices are asked for it (record-transfer.ts). */
  askRecordsAfterMs?: number;
  /**
   * Whether this client reports delivery back to senders (default true). A bot or script that
   * nobody reads through turns it off, so senders do not see "Delivered" from a machine.
   */
  receipts?: boolean;
}

export const newMid = (): string => b64(randomBytes(16));

/** A plaintext that is a message record of its own (a text, or a file, photo or voice message). */
const isMessagePlain = (p: PlainInput): boolean => p.type === 'text' || isAttachmentPlain(p);

export class ConversationsCore {
  readonly store: ConversationStore;
  readonly pacer: Pacer;
  readonly outbox: Outbox;
  /** Each room's membership as announced in it; it decides whom the owner's new room keys are wrapped for. */
  readonly membership: RoomMembers;
  /** Files, photos and voice messages: their uploads before the message goes, downloads, deletion. */
  readonly attachments: AttachmentSender;
  /** Membership records from and to the account's other devices. */
  readonly records: RecordTransfer;
  /** The text typed in each chat's composer and not sent (drafts.ts). */
  readonly drafts: Drafts;
  /** The person's mute of each chat, synced to the account's other devices (chat-state.ts). */
  readonly mutes: ChatMutes;
  protected readonly m: Messenger;
  private readonly listeners = new Set<(c: Change) => void>();
  protected readonly rules: RuleContext;
  private readonly sentHooks = new Set<(item: OutboxItem, ts: number) => Promise<void> | void>();
  private history: ((d: HistoryMessage) => Promise<void>) | null = null;
  protected readonly receipts: boolean;
  private readonly onError: (e: unknown) => void;

  constructor(o: ConversationsOptions) {
    this.m = o.messenger;
    this.onError = o.onError ?? (() => undefined);
    this.store = o.store;
    this.receipts = o.receipts ?? true;
    this.pacer = o.pacer ?? new Pacer(undefined, () => this.m.api.now());
    this.rules = {
      store: this.store,
      me: this.m.nick,
      isMember: o.isMember ?? ((chat, nick) => this.members(chat).includes(nick)),
      sharesRoom: (nick) => this.m.rooms.some((r) => r.members.includes(nick)),
      now: () => this.m.api.now(),
    };
    this.outbox = new Outbox({
      store: this.store,
      pacer: this.pacer,
      send: (chat, plain, so) => this.m.send(chat, plain, so),
      newId: () => this.m.api.newId(),
      now: () => this.m.api.now(),
      onSent: (item, ts) => this.sent(item, ts),
      onUpdate: (item) => this.outboxChanged(item),
      onNewId: (old, item) => this.renamed(old, item),
    });
    this.membership = new RoomMembers({
      messenger: this.m,
      store: this.store,
      enqueue: (chat, plain, id) => this.outbox.add(chat, plain, { id }),
      pending: () => this.outbox.pending,
      drop: (id) => this.outbox.drop(id),
      close: (chat) => this.outbox.close(chat),
      reopen: (chat) => this.outbox.reopen(chat),
      newMid,
      ...(o.warnAfterMs !== undefined ? { warnAfterMs: o.warnAfterMs } : {}),
      ...(o.onError ? { onError: o.onError } : {}),
      missing: () => this.records.missing(),
    });
    this.m.setRoomGuard(this.membership);
    this.attachments = new AttachmentSender({
      api: this.m.api,
      store: this.store,
      outbox: this.outbox,
      files: o.files,
      me: () => this.me,
      newMid,
      emit: (c) => this.emit(c),
      ...(o.onError ? { onError: o.onError } : {}),
    });
    let link: TransferLink | null = null;
    const ownLink = (): TransferLink => (link ??= messengerLink(this.m, this));
    this.records = new RecordTransfer(ownLink, this.membership, o.onError, o.askRecordsAfterMs);
    this.drafts = new Drafts(this.store);
    this.mutes = new ChatMutes(this.store, ownLink, newMid);
    // What waited for a room's record to vouch for it goes as soon as it does.
    this.membership.on((roomId) => {
      if (this.membership.status(roomId).wait === null) this.outbox.release(`room:${roomId}`);
    });
  }

  get me(): string {
    return this.rules.me;
  }

  /**
   * Cuts the messages whose disappearing timer ran out while the app was closed (call before
   * showing anything), drops waiting actions that expired, then starts sending what the outbox
   * kept from before (after a reload).
   */
  async load(): Promise<void> {
    await this.expireDue();
    await purgeExpired(this.rules);
    await this.outbox.load();
    return this.attachments.load();
  }

  on(f: (c: Change) => void): () => void {
    this.listeners.add(f);
    return () => this.listeners.delete(f);
  }

  /** Tells the listeners about records changed outside the rules (a history import). */
  notify(c: Change): void {
    this.emit(c);
  }

  /** Called for every outbox item the service accepted, whatever its type (the history transfer counts its chunks). */
  onSent(f: (item: OutboxItem, ts: number) => Promise<void> | void): () => void {
    this.sentHooks.add(f);
    return () => this.sentHooks.delete(f);
  }

  /** Where history-* messages go (transfer.ts); without a handler they are dropped, never shown. */
  handleHistory(f: ((d: HistoryMessage) => Promise<void>) | null): void {
    this.history = f;
  }

  private readonly stopping = new AbortController();

  /** Aborted by stop(): what runs in the background for this account (a history archive's upload or download) ends. */
  get signal(): AbortSignal {
    return this.stopping.signal;
  }

  /** Stops sending (the app is closing, or a test drops the device). */
  stop(): void {
    this.stopping.abort();
    this.outbox.stop();
    this.membership.stop();
    this.attachments.stop();
    this.records.stop();
  }

  /** The connection is back, or a key change was accepted: what waits goes now. */
  online(): void {
    this.outbox.online();
    this.attachments.online();
  }

  protected emit(c: Change): void {
    if (!c.added && c.changed.length === 0 && !c.removed?.length && !c.imported?.length) return;
    for (const f of this.listeners) f(c);
  }

  /** Everyone in a chat as this client knows it: a DM's two people, or a room's members as last listed. */
  members(chat: string): string[] {
    const { kind, id } = splitChatId(chat);
    if (kind === 'dm') return [this.me, id];
    return this.m.room(id)?.members ?? [];
  }

  // ---- receiving ----

  /**
   * Decrypts and stores one envelope; resolves once it is stored, so the caller may acknowledge
   * it. Throws only for passing trouble (then the envelope comes again).
   */
  async receive(env: Envelope): Promise<Ingested> {
    if (await this.store.get(env.id)) return { changed: [], ignored: 'already stored' };
    return this.take(await this.m.decryptEnvelope(env));
  }

  /** Stores an already decrypted envelope (receive() without the decryption). */
  async take(d: Awaited<ReturnType<Messenger['decryptEnvelope']>>): Promise<Ingested> {
    if (d.ok && isHistoryPlain(d.plain)) {
      // A device of the account asking for history is new: tell it the mutes that hold.
      if (d.plain.type === 'history-request' && d.from === this.me && d.plain.device !== this.m.api.device)
        void this.mutes.announce().catch((e: unknown) => this.onError(e));
      await this.history?.(d as HistoryMessage);
      return { changed: [], ignored: 'history transfer' };
    }
    if (d.ok && isRecordsPlain(d.plain)) {
      await this.records.handle({ from: d.from, chat: d.chat, plain: d.plain });
      return { changed: [], ignored: 'membership records' };
    }
    if (d.ok && d.plain.type === 'mute') {
      const taken = await this.mutes.handle({ from: d.from, chat: d.chat, plain: d.plain });
      return { changed: [], ignored: taken ? 'mute' : 'mute refused' };
    }
    if (d.ok && d.plain.type === 'members') {
      const taken = await this.membership.take({ ...d, plain: d.plain });
      return { changed: [], ignored: taken ? 'membership announcement' : 'membership announcement refused' };
    }
    const r = await ingest(this.rules, d);
    const a = r.added;
    await trackExpiry(this.store, a ? [a, ...r.changed] : r.changed);
    // Read on another of this account's devices: the chat's read marker moves here too.
    if (d.ok && d.from === this.me && d.plain.type === 'receipt' && d.plain.status === 'read')
      for (const m of r.changed) if (m.from !== this.me) await moveReadMarker(this.store, m.chat, m);
    // (Unless another of this account's devices read it already: its receipt waited for it.)
    if (a && a.from !== this.me && a.kind === 'text' && this.receipts && a.reported === undefined) {
      a.reported = 'delivered';
      await this.store.put(a);
      this.outbox.receipt(a.chat, [a.id], 'delivered');
    }
    // A record moved to the id of its sender's renewed retry: report it again under that id, the
    // only one the sender still knows (the receipts under the old id find nothing there).
    if (r.removed?.length && this.receipts)
      for (const m of r.changed) if (m.from !== this.me && m.kind === 'text' && m.reported) this.outbox.receipt(m.chat, [m.id], m.reported);
    // A deletion is out of the stored search index before it is reported (search-store.ts).
    if (r.removed?.length || r.changed.some((m) => m.deleted)) await this.store.settle?.();
    this.emit({ ...(a ? { added: a } : {}), changed: r.changed, ...(r.removed ? { removed: r.removed } : {}) });
    return r;
  }

  // ---- disappearing messages whose timer ran out (disappearing.ts) ----

  /** The message whose timer runs out next, and when (ms on the service's clock); null when none runs. */
  nextExpiry(): Promise<{ id: string; at: number } | null> {
    return nextExpiry(this.store);
  }

  /**
   * Cuts every message whose timer has run out (text, attachment, reactions, pin, actions waiting
   * for it); the views are told (`changed` holds the tombstones, `expired` set). The result names the
   * attachments whose kept files the app deletes, and the records its search index and
   * notifications drop.
   */
  async expireDue(): Promise<Expired> {
    const r = await expireDue(this.store, this.m.api.now());
    for (const id of r.attachments) await this.attachments.forget(id);
    if (r.records.length > 0) {
      await this.store.settle?.();
      this.emit({ changed: r.records });
    }
    return r;
  }

  // ---- the outbox's reports on what it sent ----

  private async sent(item: OutboxItem, ts: number): Promise<void> {
    for (const f of this.sentHooks) await f(item, ts);
    if (!isMessagePlain(item.plain)) return;
    const m = await this.store.get(item.id);
    if (!m) return;
    const done: ChatMessage = { ...m, ts, state: 'sent' };
    delete done.note;
    await this.store.put(done);
    this.emit({ changed: [done] });
  }

  private async outboxChanged(item: OutboxItem): Promise<void> {
    // An announcement the service refused for good (the room is gone) has nothing to wait for.
    if (item.plain.type === 'members' && item.state === 'failed') return this.outbox.drop(item.id);
    if (!isMessagePlain(item.plain)) return;
    const m = await this.store.get(item.id);
    if (!m) return;
    const next: ChatMessage = { ...m, state: item.state === 'failed' ? 'failed' : 'queued' };
    if (item.note && item.state !== 'waiting') next.note = item.note;
    else delete next.note;
    await this.store.put(next);
    this.emit({ changed: [next] });
  }

  private async renamed(old: string, item: OutboxItem): Promise<void> {
    if (!isMessagePlain(item.plain)) return;
    const m = await this.store.get(old);
    if (!m) return;
    await this.store.remove(old);
    const moved: ChatMessage = { ...m, id: item.id };
    await this.store.put(moved);
    this.emit({ removed: [old], changed: [moved] });
  }
}
