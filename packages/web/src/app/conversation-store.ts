/**
 * The SDK's ConversationStore over IndexedDB, sealed at rest (docs/CRYPTO.md): every record (its
 * id, chat, time, sender, text, reactions, receipts; outbox and waiting actions alike) is AES-256-GCM
 * under the history key, and IndexedDB finds rows only by tags of the index key (tags.ts): a
 * message by the tag of its id, a chat's messages by the tag of the chat, the duplicate check by
 * the tag of sender and plaintext id, a waiting action by the tags of its target, its sender, and
 * its sender and chat (the caps of the SDK's waiting.ts count them). The one clear
 * value is a message's week (`o`), so a chat can be read a page at a time. The row's clear fields
 * are in the AAD, so a row cannot be moved to another chat, week or name unnoticed.
 *
 * The service forgets a message once this device acknowledges it, so this is the only copy; every
 * method resolves after IndexedDB committed, so the SDK acknowledges only what is stored.
 */
import {
  byTime,
  openAtRest,
  sealAtRest,
  type ChatId,
  type ChatMessage,
  type ChatRange,
  type ConversationStore,
  type OutboxItem,
  type PendingAction,
  type Sealed,
} from '@svc/sdk';
import { Db, STORES, bucketOf, type Row } from './idb.js';
import type { Tags } from './tags.js';

/** A message: `c` the chat's tag, `o` its week, `m` the duplicate check's tag. */
export interface MessageRow extends Row {
  c: string;
  o: number;
  m?: string;
  sealed: Sealed;
}

/** A waiting action (`t`, `f`, `s`: the tags of its target, sender, and sender and chat) or an outbox item. */
export interface SealedRow extends Row {
  t?: string;
  f?: string;
  s?: string;
  sealed: Sealed;
}

/** Records kept opened (about a megabyte per thousand): more than a chat opens on at once. */
const OPENED_KEPT = 5_000;

const msgCtx = (r: Omit<MessageRow, 'sealed'>) => `msg|${r.k}|${r.c}|${r.o}|${r.m ?? ''}`;
const pendingCtx = (r: Omit<SealedRow, 'sealed'>) => `pending|${r.k}|${r.t ?? ''}|${r.f ?? ''}|${r.s ?? ''}`;
const outboxCtx = (r: Omit<SealedRow, 'sealed'>) => `outbox|${r.k}`;

export class IdbConversationStore implements ConversationStore {
  /**
   * Told the attachment ids of records that lost their file: a message deleted (for everyone, here
   * or by its sender) or a chat forgotten, so the copies kept on this device go with them.
   */
  filesGone: (attachmentIds: string[]) => Promise<void> = async () => undefined;

  constructor(
    private readonly db: Db,
    private readonly key: CryptoKey,
    private readonly tags: Tags,
  ) {}

  /** The row a record is stored as (also for moving an old database, migrate.ts). */
  async messageRow(message: ChatMessage): Promise<MessageRow> {
    const head: Omit<MessageRow, 'sealed'> = {
      k: await this.tags.message(message.id),
      c: await this.tags.chat(message.chat),
      o: bucketOf(message.ts),
    };
    if (message.mid) head.m = await this.tags.mid(message.from, message.mid);
    return { ...head, sealed: await sealAtRest(this.key, message, msgCtx(head)) };
  }

  async pendingRow(pending: PendingAction): Promise<SealedRow> {
    const head = {
      k: await this.tags.pending(pending.id),
      t: await this.tags.target(pending.target),
      f: await this.tags.sender(pending.from),
      s: await this.tags.senderChat(pending.from, pending.chat),
    };
    return { ...head, sealed: await sealAtRest(this.key, pending, pendingCtx(head)) };
  }

  async outboxRow(item: OutboxItem): Promise<SealedRow> {
    const head = { k: await this.tags.outbox(item.id) };
    return { ...head, sealed: await sealAtRest(this.key, item, outboxCtx(head)) };
  }

  /**
   * The records opened last, by row, with the nonce they were opened from: opening a chat reads the
   * same weeks twice (its unread count, then its log), and each record is decrypted once. A row
   * written again has a new nonce, so nothing stale is found; callers get copies. A record written,
   * removed or forgotten here leaves at once, so no text a deletion or an expiry took stays in
   * memory. Memory only, gone with the session.
   */
  private readonly opened = new Map<string, { iv: string; message: ChatMessage }>();

  private async openRow(row: MessageRow): Promise<ChatMessage | undefined> {
    const known = this.opened.get(row.k);
    if (known?.iv === row.sealed.iv) return structuredClone(known.message);
    let message: ChatMessage;
    try {
      message = (await openAtRest(this.key, row.sealed, msgCtx(row))) as ChatMessage;
    } catch {
      return undefined; // a row that does not open (tampered) is as if absent
    }
    this.opened.delete(row.k);
    this.opened.set(row.k, { iv: row.sealed.iv, message: structuredClone(message) });
    if (this.opened.size > OPENED_KEPT) this.opened.delete(this.opened.keys().next().value!);
    return message;
  }

  private async openAll(rows: MessageRow[]): Promise<ChatMessage[]> {
    const out = await Promise.all(rows.map((r) => this.openRow(r)));
    return out.filter((m): m is ChatMessage => m !== undefined).sort(byTime);
  }

  async get(id: string): Promise<ChatMessage | undefined> {
    const row = await this.db.get<MessageRow>(STORES.messages, await this.tags.message(id));
    const message = row ? await this.openRow(row) : undefined;
    return message?.id === id ? message : undefined;
  }

  async put(message: ChatMessage): Promise<void> {
    // A deletion takes the record's attachment away: the stored one still names it.
    const was = message.deleted && !message.attachment ? (await this.get(message.id))?.attachment : undefined;
    const row = await this.messageRow(message);
    this.opened.delete(row.k);
    await this.db.put(STORES.messages, row);
    if (was) await this.filesGone([was.id]);
  }

  async remove(id: string): Promise<void> {
    const k = await this.tags.message(id);
    this.opened.delete(k);
    await this.db.delete(STORES.messages, k);
  }

  async idForMid(from: string, mid: string): Promise<string | undefined> {
    for (const row of await this.db.byIndex<MessageRow>(STORES.messages, 'mid', await this.tags.mid(from, mid))) {
      const message = await this.openRow(row);
      if (message?.from === from && message.mid === mid) return message.id;
    }
    return undefined;
  }

  /**
   * Rows are found by week (the order within a week is sealed): all the weeks of the range at
   * once, or with a `limit` the newest weeks one at a time, each opened, until enough are found.
   */
  async chat(chat: ChatId, options: ChatRange = {}): Promise<ChatMessage[]> {
    const chatTag = await this.tags.chat(chat);
    const { limit, before, after } = options;
    const first = after ? bucketOf(after.ts) : -Infinity;
    const inRange = (m: ChatMessage) => m.chat === chat && (!before || byTime(m, before) < 0) && (!after || byTime(m, after) > 0);
    let last = before ? bucketOf(before.ts) : Infinity;
    if (last < first) return [];
    if (limit === undefined) return (await this.openAll(await this.db.chatRows<MessageRow>(chatTag, first, last))).filter(inRange);
    let list: ChatMessage[] = [];
    while (list.length < limit && last >= first) {
      const week = await this.db.newestWeek(chatTag, first, last);
      if (week === undefined) break;
      list = [...(await this.openAll(await this.db.chatRows<MessageRow>(chatTag, week, week))).filter(inRange), ...list];
      last = week - 1;
    }
    return list.slice(Math.max(0, list.length - limit));
  }

  async all(): Promise<ChatMessage[]> {
    return this.openAll(await this.db.all<MessageRow>(STORES.messages));
  }

  async forgetChat(chat: ChatId): Promise<void> {
    const chatTag = await this.tags.chat(chat);
    const files = (await this.openAll(await this.db.chatRows<MessageRow>(chatTag))).flatMap((m) => (m.attachment ? [m.attachment.id] : []));
    await this.db.deleteChat(chatTag, await this.tags.chatMeta(chat));
    for (const [k, { message }] of this.opened) if (message.chat === chat) this.opened.delete(k);
    if (files.length > 0) await this.filesGone(files);
    for (const [row, pending] of await this.openSealed<PendingAction>(STORES.pending, pendingCtx))
      if (pending.chat === chat) await this.db.delete(STORES.pending, row.k);
  }

  private async openSealed<T>(
    store: typeof STORES.pending | typeof STORES.outbox,
    ctx: (row: SealedRow) => string,
    rows?: SealedRow[],
  ): Promise<[SealedRow, T][]> {
    const out: [SealedRow, T][] = [];
    for (const row of rows ?? (await this.db.all<SealedRow>(store))) {
      try {
        out.push([row, (await openAtRest(this.key, row.sealed, ctx(row))) as T]);
      } catch {
        // dropped: tampered
      }
    }
    return out;
  }

  async addPending(pending: PendingAction): Promise<void> {
    await this.db.put(STORES.pending, await this.pendingRow(pending));
  }

  async takePending(target: string): Promise<PendingAction[]> {
    const rows = await this.db.byIndex<SealedRow>(STORES.pending, 'target', await this.tags.target(target));
    if (rows.length === 0) return [];
    const list = (await this.openSealed<PendingAction>(STORES.pending, pendingCtx, rows))
      .map(([, pending]) => pending)
      .filter((p) => p.target === target);
    for (const row of rows) await this.db.delete(STORES.pending, row.k);
    return list.sort(byTime);
  }

  async countPending(options?: { from: string; chat?: ChatId }): Promise<number> {
    if (!options) return this.db.count(STORES.pending);
    const index =
      options.chat === undefined
        ? { name: 'sender', key: await this.tags.sender(options.from) }
        : { name: 'sender_chat', key: await this.tags.senderChat(options.from, options.chat) };
    return this.db.count(STORES.pending, index);
  }

  /** Opens every waiting row (at most the SDK's cap of them, plus rows of an older layout, which do not open and go). */
  async purgePending(before: number): Promise<{ removed: number; oldest?: number }> {
    const rows = await this.db.all<SealedRow>(STORES.pending);
    const live = (await this.openSealed<PendingAction>(STORES.pending, pendingCtx, rows)).filter(([, pending]) => pending.at >= before);
    const keep = new Set(live.map(([row]) => row.k));
    let removed = 0;
    for (const row of rows) {
      if (keep.has(row.k)) continue;
      await this.db.delete(STORES.pending, row.k);
      removed++;
    }
    return live.length === 0 ? { removed } : { removed, oldest: Math.min(...live.map(([, pending]) => pending.at)) };
  }

  /** The transfer's bookkeeping (it names chats and devices): sealed in `kv` under the tag of its name. */
  async getMeta(key: string): Promise<unknown> {
    const row = await this.db.get<Sealed>(STORES.kv, await this.tags.meta(key));
    if (!row) return undefined;
    try {
      return await openAtRest(this.key, row, `meta|${key}`);
    } catch {
      return undefined;
    }
  }

  async putMeta(key: string, value: unknown): Promise<void> {
    await this.db.put(STORES.kv, await sealAtRest(this.key, value, `meta|${key}`), await this.tags.meta(key));
  }

  async removeMeta(key: string): Promise<void> {
    await this.db.delete(STORES.kv, await this.tags.meta(key));
  }

  async outboxList(): Promise<OutboxItem[]> {
    const list = (await this.openSealed<OutboxItem>(STORES.outbox, outboxCtx)).map(([, item]) => item);
    return list.sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1));
  }

  async outboxPut(item: OutboxItem): Promise<void> {
    await this.db.put(STORES.outbox, await this.outboxRow(item));
  }

  async outboxRemove(id: string): Promise<void> {
    await this.db.delete(STORES.outbox, await this.tags.outbox(id));
  }
}
