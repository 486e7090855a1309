/**
 * The outbox: every message stays in it until the service has accepted it, persisted through the
 * ConversationStore (so a reload or a crash loses nothing), and goes out in order within a chat,
 * paced under the account's message budget (pacer.ts).
 *
 * What happens to a send that does not go through:
 * - 429: waits for Retry-After (the pacer learns), then goes again; never shown as an error;
 * - network, 5xx: waits and goes again, sooner when the app says the connection is back (online());
 * - a changed key not yet accepted: `held` until the app calls online() after the person decides;
 * - a room whose membership record does not vouch for its listing or its newest key: `held` until
 *   release() for that room, once the record and the listing agree again;
 * - anything else (not a member, no such user…): `failed`, shown as "Not sent" with Retry.
 * A retry past 4 minutes gets a new envelope id (the service refuses ids outside ±5 minutes); the
 * plaintext id stays, so receivers drop a second copy if the first did arrive.
 *
 * Receipts are outbox items too, kept in memory only: merged per chat, sent after the person's
 * own messages, and dropped after a few refusals rather than retried forever.
 *
 * A message with a file waits (`uploading`), holding its chat, until the file has gone up
 * (attachments/sender.ts uploads it and then update()s the item); only then is it sent.
 *
 * A chat this account is leaving (a room left or deleted) is closed first (close()): what waits
 * for it is dropped and nothing more goes to it, so no receipt reaches the service after the
 * leave and comes back refused, an error the client could have avoided.
 */
import { ulidTime } from '@svc/protocol';
import { isSdkError, SdkError } from '../errors.js';
import type { ChatId } from '../envelopes.js';
import type { OutboxItem, Priority } from './model.js';
import { Pacer } from './pacer.js';
import { MAX_RECEIPT_IDS, type PlainInput, type ReceiptPlain } from '../wire/plaintext.js';
import type { ConversationStore } from './store.js';

/** A retry with the same id must land inside the service's ±5 minute window. */
const FRESH_ID_MS = 4 * 60_000;
/** Receipts wait this long, so that a burst of messages gets one receipt. */
export const RECEIPT_DELAY_MS = 1_500;
const RECEIPT_TRIES = 3;
const BACKOFF_MS = [1_000, 2_000, 5_000, 10_000, 30_000];
/** Refusals that hold a message until something changes (a decision, an announcement), never failures. */
const HOLD = new Set(['untrusted_key', 'unannounced_member', 'no_membership_record', 'room_key_not_owner']);

export interface OutboxDeps {
  store: ConversationStore;
  pacer: Pacer;
  send(chat: ChatId, plain: PlainInput, o: { id: string; sentAt: number }): Promise<{ id: string; ts: number }>;
  newId(): string;
  now(): number;
  /** The service accepted `item` at `ts`. */
  onSent(item: OutboxItem, ts: number): Promise<void>;
  /** `item` changed state (failed, held, waiting again) or its countdown did. */
  onUpdate(item: OutboxItem): Promise<void>;
  /** `item` is sent under a new envelope id from now on. */
  onNewId(oldId: string, item: OutboxItem): Promise<void>;
}

interface Transient extends OutboxItem {
  notBefore: number;
}

export class Outbox {
  private items: OutboxItem[] = [];
  private receipts: Transient[] = [];
  private running = false;
  private again = false;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private failures = 0;
  private stopped = false;
  /** createdAt orders the outbox across reloads, so no two items share one. */
  private lastCreated = 0;
  /** Chats being left: nothing more is sent to them (close()). */
  private readonly closed = new Set<ChatId>();
  /**
   * The send under way: close() waits for one to its chat, and a receipt in it has its plaintext
   * sealed already, so nothing more is merged into it.
   */
  private current: { item: OutboxItem; done: Promise<unknown> } | null = null;

  constructor(private readonly d: OutboxDeps) {}

  /** Reads the persisted outbox (after a reload) and starts sending. */
  async load(): Promise<void> {
    this.items = await this.d.store.outboxList();
    for (const i of this.items) this.lastCreated = Math.max(this.lastCreated, i.createdAt);
    this.kick();
  }

  /** What waits, oldest first (receipts not included). */
  get pending(): readonly OutboxItem[] {
    return this.items;
  }

  async add(chat: ChatId, plain: PlainInput, o: { id?: string; priority?: Priority; uploading?: boolean } = {}): Promise<OutboxItem> {
    if (this.closed.has(chat)) throw new SdkError('not_member', { message: 'This conversation was left.' });
    this.lastCreated = Math.max(this.d.now(), this.lastCreated + 1);
    const item: OutboxItem = {
      id: o.id ?? this.d.newId(),
      chat,
      plain,
      createdAt: this.lastCreated,
      priority: o.priority ?? 'user',
      state: 'waiting',
      attempts: 0,
      ...(o.uploading ? { uploading: true } : {}),
    };
    await this.d.store.outboxPut(item);
    this.items.push(item);
    this.kick();
    return item;
  }

  /** Queues a receipt, merged with any that waits for the same chat (a read one replaces delivered). */
  receipt(chat: ChatId, ids: string[], status: ReceiptPlain['status']): void {
    if (ids.length === 0 || this.closed.has(chat)) return;
    if (status === 'read') {
      for (const r of this.receipts)
        if (r.chat === chat && r.plain.type === 'receipt' && r.plain.status === 'delivered')
          r.plain.ids = r.plain.ids.filter((x) => !ids.includes(x));
      this.receipts = this.receipts.filter((r) => r.plain.type !== 'receipt' || r.plain.ids.length > 0);
    }
    const same = this.receipts.find(
      (r) =>
        r !== this.current?.item &&
        r.chat === chat &&
        r.plain.type === 'receipt' &&
        r.plain.status === status &&
        r.plain.ids.length < MAX_RECEIPT_IDS,
    );
    if (same && same.plain.type === 'receipt') {
      const room = MAX_RECEIPT_IDS - same.plain.ids.length;
      const add = ids.filter((x) => !(same.plain as ReceiptPlain).ids.includes(x));
      same.plain.ids.push(...add.slice(0, room));
      if (add.length > room) this.receipt(chat, add.slice(room), status);
    } else {
      const now = this.d.now();
      this.receipts.push({
        id: '',
        chat,
        plain: { type: 'receipt', ids: ids.slice(0, MAX_RECEIPT_IDS), status, sentAt: 0 },
        createdAt: now,
        priority: 'receipt',
        state: 'waiting',
        attempts: 0,
        notBefore: now + RECEIPT_DELAY_MS,
      });
      if (ids.length > MAX_RECEIPT_IDS) this.receipt(chat, ids.slice(MAX_RECEIPT_IDS), status);
    }
    this.kick();
  }

  /** The person pressed Retry on a message that was not sent. */
  async retry(id: string): Promise<void> {
    const item = this.items.find((i) => i.id === id);
    if (!item) return;
    item.state = 'waiting';
    delete item.note;
    await this.d.store.outboxPut(item);
    await this.d.onUpdate(item);
    this.kick();
  }

  /** Changes an item that has not gone yet (its upload ended), keeps the change and tries to send. */
  async update(id: string, f: (item: OutboxItem) => void): Promise<OutboxItem | undefined> {
    const item = this.items.find((i) => i.id === id);
    if (!item) return undefined;
    f(item);
    await this.d.store.outboxPut(item);
    await this.d.onUpdate(item);
    this.kick();
    return item;
  }

  /** Removes an item that has not gone yet (a message deleted before it was sent). */
  async drop(id: string): Promise<void> {
    this.items = this.items.filter((i) => i.id !== id);
    await this.d.store.outboxRemove(id);
  }

  /** The connection is back (or a held key was accepted): try everything that waits now. */
  online(): void {
    this.failures = 0;
    for (const i of this.items) if (i.state === 'held') i.state = 'waiting';
    this.kick();
  }

  /** What waited for `chat` to be vouched for goes now (the room's membership record caught up). */
  release(chat: ChatId): void {
    let any = false;
    for (const i of this.items)
      if (i.chat === chat && i.state === 'held') {
        i.state = 'waiting';
        any = true;
      }
    if (any) this.kick();
  }

  /** Milliseconds until the item with this id is expected to go (0: now or sending), or null if not waiting. */
  waitMs(id: string): number | null {
    const item = this.items.find((i) => i.id === id);
    if (!item || item.state !== 'waiting') return null;
    const ahead = this.items.filter(
      (i) => i.state === 'waiting' && i.priority === 'user' && (i.createdAt < item.createdAt || (i.createdAt === item.createdAt && i.id < item.id)),
    ).length;
    return this.d.pacer.waitMs(item.priority, ahead);
  }

  /**
   * This account is about to leave `chat` (a room left or deleted): what waits for it is dropped
   * (receipts, and messages that could only come back refused once it has left), later receipts
   * for it are ignored and later messages refused. Resolves once a send to it that is under way
   * has ended, so that the leave goes after it.
   */
  async close(chat: ChatId): Promise<void> {
    this.closed.add(chat);
    this.receipts = this.receipts.filter((r) => r.chat !== chat || r === this.current?.item);
    for (const i of this.items.filter((x) => x.chat === chat && x !== this.current?.item)) await this.drop(i.id);
    if (this.current?.item.chat === chat) await this.current.done;
  }

  /** The leave did not happen (its request failed): `chat` may be written to again. */
  reopen(chat: ChatId): void {
    this.closed.delete(chat);
    this.kick();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Starts the send loop if it is not running (it runs one send at a time). */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    this.running = true;
    void this.pump().finally(() => {
      this.running = false;
      if (this.again) {
        this.again = false;
        this.kick();
      }
    });
  }

  private later(ms: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(
      () => {
        this.timer = null;
        this.kick();
      },
      Math.max(50, ms),
    );
  }

  /** The next item to send: the head of each chat's queue (a held head holds its chat), the person's first. */
  private next(): { item: OutboxItem | Transient; wait: number } | null {
    const heads = new Map<string, OutboxItem>();
    const blocked = new Set<string>();
    for (const i of this.items) {
      if (heads.has(i.chat) || blocked.has(i.chat) || this.closed.has(i.chat)) continue;
      if (i.state === 'held' || (i.uploading && i.state === 'waiting')) blocked.add(i.chat);
      else if (i.state === 'waiting') heads.set(i.chat, i);
    }
    const ready = [...heads.values()].sort((a, b) => a.createdAt - b.createdAt);
    const first = ready.find((i) => i.priority === 'user');
    if (first) return { item: first, wait: this.d.pacer.waitMs('user') };
    const now = this.d.now();
    const cands: (OutboxItem | Transient)[] = [...this.receipts, ...ready];
    if (cands.length === 0) return null;
    // A receipt that is due goes before bulk sends (the history transfer): it is small and people wait for it.
    const rank = (i: OutboxItem | Transient): number => (i.priority === 'receipt' && due(i) <= now ? 0 : 1);
    const best = cands.reduce((a, b) => (rank(a) < rank(b) || (rank(a) === rank(b) && due(a) <= due(b)) ? a : b));
    return { item: best, wait: Math.max(this.d.pacer.waitMs(best.priority), due(best) - now) };
  }

  private async pump(): Promise<void> {
    for (;;) {
      if (this.stopped) return;
      const n = this.next();
      if (!n) return;
      if (n.wait > 0) return this.later(n.wait);
      const ok = await this.attempt(n.item);
      if (!ok) return;
    }
  }

  /** One send; false when the loop should pause (a timer or online() starts it again). */
  private async attempt(item: OutboxItem | Transient): Promise<boolean> {
    const transient = this.receipts.includes(item as Transient);
    if (!transient && this.d.now() - ulidTime(item.id) > FRESH_ID_MS) await this.renew(item);
    // close() may have dropped it during that wait.
    if (this.closed.has(item.chat)) return true;
    const id = transient ? this.d.newId() : item.id;
    item.attempts += 1;
    this.d.pacer.note();
    const sending = this.d.send(item.chat, item.plain, { id, sentAt: item.plain.sentAt || this.d.now() });
    const current = { item, done: sending.catch(() => undefined) };
    this.current = current;
    try {
      const r = await sending;
      this.failures = 0;
      if (transient) this.receipts = this.receipts.filter((x) => x !== item);
      else {
        this.items = this.items.filter((x) => x !== item);
        await this.d.store.outboxRemove(item.id);
        await this.d.onSent(item, r.ts);
      }
      return true;
    } catch (e) {
      // A send to a chat closed meanwhile is not tried again: the leave goes after it.
      if (this.closed.has(item.chat)) {
        if (transient) this.receipts = this.receipts.filter((x) => x !== item);
        else await this.drop(item.id);
        return true;
      }
      return this.failed(item, transient, e);
    } finally {
      if (this.current === current) this.current = null;
    }
  }

  private async failed(item: OutboxItem | Transient, transient: boolean, e: unknown): Promise<boolean> {
    if (isSdkError(e, 'rate_limited')) {
      this.d.pacer.refused(e.retryAfter ?? 1);
      if (transient && item.attempts >= RECEIPT_TRIES) this.receipts = this.receipts.filter((x) => x !== item);
      if (!transient) await this.d.onUpdate(item);
      return true; // the pacer now makes the loop wait
    }
    const passing = isSdkError(e) && (e.code === 'network' || e.code === 'internal' || e.code === 'bad_response' || e.code === 'unauthenticated');
    if (!isSdkError(e) || passing) {
      if (isSdkError(e, 'network')) this.d.pacer.unnote();
      if (transient && item.attempts >= RECEIPT_TRIES) this.receipts = this.receipts.filter((x) => x !== item);
      this.later(BACKOFF_MS[Math.min(this.failures++, BACKOFF_MS.length - 1)]!);
      return false;
    }
    if (transient) {
      this.receipts = this.receipts.filter((x) => x !== item);
      return true;
    }
    if (e.code === 'clock_skew' || e.code === 'id_conflict') {
      // The SDK corrected its clock from the answer: the next try goes under a fresh id.
      if (item.attempts < 3) {
        await this.renew(item);
        return true;
      }
    }
    item.state = HOLD.has(e.code) ? 'held' : 'failed';
    item.note = e.message;
    await this.d.store.outboxPut(item);
    await this.d.onUpdate(item);
    return true;
  }

  private async renew(item: OutboxItem): Promise<void> {
    const old = item.id;
    item.id = this.d.newId();
    await this.d.store.outboxRemove(old);
    await this.d.store.outboxPut(item);
    await this.d.onNewId(old, item);
  }
}

function due(i: OutboxItem | Transient): number {
  return 'notBefore' in i ? i.notBefore : i.createdAt;
}
