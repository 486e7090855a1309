/**
 * The storage a conversation needs, as a small interface: the web app implements it over
 * IndexedDB (sealed at rest under the history key), and MemoryStore here serves Node programs and
 * the tests. Every method resolves once the change is durable, so a caller may acknowledge an
 * envelope after the store took it.
 */
import type { ChatId } from '../envelopes.js';
import type { ChatMessage, OutboxItem, PendingAction } from './model.js';

/** Which records of a chat to read (ConversationStore.chat): points are (ts, id), both ends excluded. */
export interface ChatRange {
  limit?: number;
  before?: { ts: number; id: string };
  after?: { ts: number; id: string };
}

export interface ConversationStore {
  get(id: string): Promise<ChatMessage | undefined>;
  /** Inserts or replaces the record with this id. */
  put(m: ChatMessage): Promise<void>;
  remove(id: string): Promise<void>;
  /** The id of the record that carries plaintext id `mid` from `from`, if any (the duplicate check). */
  idForMid(from: string, mid: string): Promise<string | undefined>;
  /**
   * A chat's records in time order (ts, then id): only those before `before` and after `after`
   * when given, and of those the newest `limit` when given.
   */
  chat(chat: ChatId, o?: ChatRange): Promise<ChatMessage[]>;
  /** Every record of every chat (export, search). */
  all(): Promise<ChatMessage[]>;
  /** Drops a chat's records (and its pending actions). */
  forgetChat(chat: ChatId): Promise<void>;

  addPending(p: PendingAction): Promise<void>;
  /** Removes and returns the actions waiting for `target`, oldest first. */
  takePending(target: string): Promise<PendingAction[]>;
  /** How many actions wait: from `from` (in `chat` when given), or in all. */
  countPending(o?: { from: string; chat?: ChatId }): Promise<number>;
  /**
   * Drops the actions that began to wait before `before` (and any row that cannot be read);
   * returns how many went, and when the oldest that stays began to wait.
   */
  purgePending(before: number): Promise<{ removed: number; oldest?: number }>;

  outboxList(): Promise<OutboxItem[]>;
  outboxPut(item: OutboxItem): Promise<void>;
  outboxRemove(id: string): Promise<void>;

  /**
   * Small named values the conversation layer keeps across reloads (the history transfer's state
   * on both sides). Values are JSON-compatible and may hold history, so a store that seals records
   * at rest seals these too.
   */
  getMeta(key: string): Promise<unknown>;
  putMeta(key: string, value: unknown): Promise<void>;
  removeMeta(key: string): Promise<void>;

  /**
   * Optional: resolves once what the store keeps beside the records (SearchStore's index) no longer
   * holds what was removed from them. Conversations awaits it before it reports a deletion or an
   * expiry.
   */
  settle?(): Promise<void>;
}

export const byTime = (a: { ts: number; id: string }, b: { ts: number; id: string }): number =>
  a.ts - b.ts || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** Everything a MemoryStore holds, as plain data (a Node program keeps it in a file between runs). */
export interface MemorySnapshot {
  messages: ChatMessage[];
  pending: PendingAction[];
  outbox: OutboxItem[];
  /** Pairs rather than an object, so no key can be mistaken for a property of Object. */
  meta: [string, unknown][];
}

/** A ConversationStore in memory (Node programs, tests); structured copies keep callers from sharing objects. */
export class MemoryStore implements ConversationStore {
  private readonly messages = new Map<string, ChatMessage>();
  private readonly mids = new Map<string, string>();
  private readonly pending = new Map<string, PendingAction[]>();
  private readonly outbox = new Map<string, OutboxItem>();
  private readonly meta = new Map<string, unknown>();

  async get(id: string): Promise<ChatMessage | undefined> {
    const m = this.messages.get(id);
    return m ? structuredClone(m) : undefined;
  }

  async put(m: ChatMessage): Promise<void> {
    this.messages.set(m.id, structuredClone(m));
    if (m.mid) this.mids.set(`${m.from} ${m.mid}`, m.id);
  }

  async remove(id: string): Promise<void> {
    const m = this.messages.get(id);
    if (m?.mid && this.mids.get(`${m.from} ${m.mid}`) === id) this.mids.delete(`${m.from} ${m.mid}`);
    this.messages.delete(id);
  }

  async idForMid(from: string, mid: string): Promise<string | undefined> {
    return this.mids.get(`${from} ${mid}`);
  }

  async chat(chat: ChatId, o: ChatRange = {}): Promise<ChatMessage[]> {
    let list = [...this.messages.values()].filter((m) => m.chat === chat).sort(byTime);
    const { before, after } = o;
    if (before) list = list.filter((m) => byTime(m, before) < 0);
    if (after) list = list.filter((m) => byTime(m, after) > 0);
    if (o.limit !== undefined) list = list.slice(Math.max(0, list.length - o.limit));
    return list.map((m) => structuredClone(m));
  }

  async all(): Promise<ChatMessage[]> {
    return [...this.messages.values()].sort(byTime).map((m) => structuredClone(m));
  }

  async forgetChat(chat: ChatId): Promise<void> {
    for (const m of [...this.messages.values()]) if (m.chat === chat) await this.remove(m.id);
    for (const [target, list] of this.pending) {
      const keep = list.filter((p) => p.chat !== chat);
      if (keep.length) this.pending.set(target, keep);
      else this.pending.delete(target);
    }
  }

  async addPending(p: PendingAction): Promise<void> {
    const list = this.pending.get(p.target) ?? [];
    if (!list.some((x) => x.id === p.id)) list.push(structuredClone(p));
    this.pending.set(p.target, list);
  }

  async takePending(target: string): Promise<PendingAction[]> {
    const list = this.pending.get(target) ?? [];
    this.pending.delete(target);
    return list.sort(byTime);
  }

  async countPending(o?: { from: string; chat?: ChatId }): Promise<number> {
    let n = 0;
    for (const list of this.pending.values())
      n += o ? list.filter((p) => p.from === o.from && (o.chat === undefined || p.chat === o.chat)).length : list.length;
    return n;
  }

  async purgePending(before: number): Promise<{ removed: number; oldest?: number }> {
    let removed = 0;
    let oldest: number | undefined;
    for (const [target, list] of this.pending) {
      const keep = list.filter((p) => p.at >= before);
      removed += list.length - keep.length;
      for (const p of keep) oldest = Math.min(oldest ?? p.at, p.at);
      if (keep.length) this.pending.set(target, keep);
      else this.pending.delete(target);
    }
    return oldest === undefined ? { removed } : { removed, oldest };
  }

  async outboxList(): Promise<OutboxItem[]> {
    return [...this.outbox.values()].sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1)).map((i) => structuredClone(i));
  }

  async outboxPut(item: OutboxItem): Promise<void> {
    this.outbox.set(item.id, structuredClone(item));
  }

  async outboxRemove(id: string): Promise<void> {
    this.outbox.delete(id);
  }

  async getMeta(key: string): Promise<unknown> {
    return structuredClone(this.meta.get(key));
  }

  async putMeta(key: string, value: unknown): Promise<void> {
    this.meta.set(key, structuredClone(value));
  }

  async removeMeta(key: string): Promise<void> {
    this.meta.delete(key);
  }

  /** A copy of everything held, to keep and give to MemoryStore.from later. */
  snapshot(): MemorySnapshot {
    return structuredClone({
      messages: [...this.messages.values()],
      pending: [...this.pending.values()].flat(),
      outbox: [...this.outbox.values()],
      meta: [...this.meta.entries()],
    });
  }

  /** A store holding what `s` holds (a snapshot() of another one). */
  static from(s: MemorySnapshot): MemoryStore {
    const store = new MemoryStore();
    for (const m of s.messages) store.messages.set(m.id, structuredClone(m));
    // The duplicate check's index follows the records, as put() keeps it.
    for (const m of store.messages.values()) if (m.mid) store.mids.set(`${m.from} ${m.mid}`, m.id);
    for (const p of s.pending) {
      const list = store.pending.get(p.target) ?? [];
      list.push(structuredClone(p));
      store.pending.set(p.target, list);
    }
    for (const i of s.outbox) store.outbox.set(i.id, structuredClone(i));
    for (const [k, v] of s.meta) store.meta.set(k, structuredClone(v));
    return store;
  }
}
