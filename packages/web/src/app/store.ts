/**
 * The SDK's ConversationStore over IndexedDB, sealed at rest (decisions §12): every record's
 * content (sender, text, reactions, receipts, outbox plaintext) is AES-256-GCM under the history
 * key, with the record named in the AAD so rows cannot be swapped. In the clear stay only what
 * IndexedDB needs to find rows: the chat id and time (to page a chat), the target id of a waiting
 * action, and the plaintext's random `mid` (the duplicate check; it is random, so it says nothing).
 *
 * The service forgets a message once this device acknowledges it, so this is the only copy; every
 * method resolves after IndexedDB committed, so the SDK acknowledges only what is stored.
 */
import { openAtRest, sealAtRest, type ChatId, type ChatMessage, type ConversationStore, type OutboxItem, type PendingAction, type Sealed } from '@svc/sdk';
import { Db, STORES } from './idb.js';

interface MessageRow {
  id: string;
  chat: string;
  ts: number;
  mid?: string;
  sealed: Sealed;
}

interface SealedRow {
  id: string;
  target?: string;
  createdAt?: number;
  sealed: Sealed;
}

/** A row written before the conversation layer (one state field, no kind). */
interface LegacyContent {
  from: string;
  body?: string;
  sentAt?: number;
  state: 'received' | 'sending' | 'sent' | 'failed' | 'undecryptable';
  note?: string;
}

const msgCtx = (chat: string, id: string) => `msg|${chat}|${id}`;
const pendingCtx = (id: string) => `pending|${id}`;
const outboxCtx = (id: string) => `outbox|${id}`;

/** Reads a record of either format; an old unsent one becomes "Not sent", so Retry can send it. */
function fromContent(row: MessageRow, c: Omit<ChatMessage, 'id' | 'chat' | 'ts'> | LegacyContent): ChatMessage {
  const base = { id: row.id, chat: row.chat as ChatId, ts: row.ts };
  if ('kind' in c) return { ...base, ...c };
  if (c.state === 'undecryptable') return { ...base, from: c.from, sentAt: row.ts, kind: 'undecryptable', ...(c.note ? { note: c.note } : {}) };
  const m: ChatMessage = { ...base, from: c.from, sentAt: c.sentAt ?? row.ts, kind: 'text', body: c.body ?? '' };
  if (c.state === 'sent') m.state = 'sent';
  if (c.state === 'sending' || c.state === 'failed') {
    m.state = 'failed';
    m.note = c.note ?? 'This message was not sent.';
  }
  return m;
}

export class IdbConversationStore implements ConversationStore {
  constructor(
    private readonly db: Db,
    private readonly key: CryptoKey,
  ) {}

  private async openRow(row: MessageRow): Promise<ChatMessage | undefined> {
    try {
      const c = (await openAtRest(this.key, row.sealed, msgCtx(row.chat, row.id))) as Omit<ChatMessage, 'id' | 'chat' | 'ts'> | LegacyContent;
      return fromContent(row, c);
    } catch {
      return undefined; // a row that does not open (tampered) is as if absent
    }
  }

  private async openAll(rows: MessageRow[]): Promise<ChatMessage[]> {
    const out = await Promise.all(rows.map((r) => this.openRow(r)));
    return out.filter((m): m is ChatMessage => m !== undefined);
  }

  async get(id: string): Promise<ChatMessage | undefined> {
    const row = await this.db.get<MessageRow>(STORES.messages, id);
    return row ? this.openRow(row) : undefined;
  }

  async put(m: ChatMessage): Promise<void> {
    const { id, chat, ts, ...content } = m;
    const sealed = await sealAtRest(this.key, content, msgCtx(chat, id));
    const row: MessageRow = { id, chat, ts, sealed, ...(m.mid ? { mid: m.mid } : {}) };
    await this.db.put(STORES.messages, row);
  }

  async remove(id: string): Promise<void> {
    await this.db.delete(STORES.messages, id);
  }

  async idForMid(from: string, mid: string): Promise<string | undefined> {
    for (const row of await this.db.byIndex<MessageRow>(STORES.messages, 'mid', mid)) {
      const m = await this.openRow(row);
      if (m?.from === from) return m.id;
    }
    return undefined;
  }

  async chat(chat: ChatId, o: { limit?: number; before?: { ts: number; id: string } } = {}): Promise<ChatMessage[]> {
    const rows = o.limit !== undefined ? await this.db.newestOfChat<MessageRow>(chat, o.limit, o.before) : await this.db.byChat<MessageRow>(chat);
    return this.openAll(rows);
  }

  async all(): Promise<ChatMessage[]> {
    return this.openAll(await this.db.all<MessageRow>(STORES.messages));
  }

  async forgetChat(chat: ChatId): Promise<void> {
    await this.db.deleteChat(chat);
    for (const p of await this.openSealed<PendingAction>(STORES.pending, pendingCtx)) if (p.chat === chat) await this.db.delete(STORES.pending, p.id);
  }

  private async openSealed<T>(store: typeof STORES.pending | typeof STORES.outbox, ctx: (id: string) => string, rows?: SealedRow[]): Promise<T[]> {
    const out: T[] = [];
    for (const row of rows ?? (await this.db.all<SealedRow>(store))) {
      try {
        out.push((await openAtRest(this.key, row.sealed, ctx(row.id))) as T);
      } catch {
        // dropped: tampered
      }
    }
    return out;
  }

  async addPending(p: PendingAction): Promise<void> {
    await this.db.put(STORES.pending, { id: p.id, target: p.target, sealed: await sealAtRest(this.key, p, pendingCtx(p.id)) } satisfies SealedRow);
  }

  async takePending(target: string): Promise<PendingAction[]> {
    const rows = await this.db.byIndex<SealedRow>(STORES.pending, 'target', target);
    if (rows.length === 0) return [];
    const list = await this.openSealed<PendingAction>(STORES.pending, pendingCtx, rows);
    for (const r of rows) await this.db.delete(STORES.pending, r.id);
    return list.sort((a, b) => a.ts - b.ts || (a.id < b.id ? -1 : 1));
  }

  /** The transfer's bookkeeping (it names chats and devices): sealed in `kv` under `meta:<key>`. */
  async getMeta(key: string): Promise<unknown> {
    const row = await this.db.get<Sealed>(STORES.kv, `meta:${key}`);
    if (!row) return undefined;
    try {
      return await openAtRest(this.key, row, `meta|${key}`);
    } catch {
      return undefined;
    }
  }

  async putMeta(key: string, value: unknown): Promise<void> {
    await this.db.put(STORES.kv, await sealAtRest(this.key, value, `meta|${key}`), `meta:${key}`);
  }

  async removeMeta(key: string): Promise<void> {
    await this.db.delete(STORES.kv, `meta:${key}`);
  }

  async outboxList(): Promise<OutboxItem[]> {
    const list = await this.openSealed<OutboxItem>(STORES.outbox, outboxCtx);
    return list.sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1));
  }

  async outboxPut(item: OutboxItem): Promise<void> {
    await this.db.put(STORES.outbox, { id: item.id, sealed: await sealAtRest(this.key, item, outboxCtx(item.id)) } satisfies SealedRow);
  }

  async outboxRemove(id: string): Promise<void> {
    await this.db.delete(STORES.outbox, id);
  }
}
