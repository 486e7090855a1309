/**
 * The account's local history in IndexedDB, encrypted at rest (decisions §12): every message body,
 * sender and state is sealed with the SDK's history key (AES-256-GCM, AAD naming the record), so
 * the browser profile holds only ciphertext plus the chat id and time needed to list and order.
 * The service forgets a message once this device acknowledges it, so this is the only copy.
 */
import { openAtRest, sealAtRest, type Sealed } from '@svc/sdk';
import { Db, STORES } from './idb.js';

export type MessageState = 'received' | 'sending' | 'sent' | 'failed' | 'undecryptable';

/** A message as the views show it (decrypted, in memory only). */
export interface Message {
  id: string;
  chat: string;
  /** Service time (for one's own message still sending: the local estimate). */
  ts: number;
  from: string;
  /** Absent for a message that failed to decrypt: it is never shown as text. */
  body?: string;
  sentAt?: number;
  state: MessageState;
  /** Why sending or decrypting failed, in words. */
  note?: string;
}

/** What IndexedDB holds per message. */
interface MessageRow {
  id: string;
  chat: string;
  ts: number;
  sealed: Sealed;
}

/** Per-chat bookkeeping for the chat list: last activity and unread count. */
export interface ChatMeta {
  chat: string;
  lastTs: number;
  unread: number;
}

const ctx = (chat: string, id: string) => `msg|${chat}|${id}`;

export class History {
  constructor(
    private readonly db: Db,
    private readonly key: CryptoKey,
  ) {}

  /** Stores (or replaces) a message; resolves once IndexedDB has committed it. */
  async put(m: Message): Promise<void> {
    const { id, chat, ts, ...rest } = m;
    const sealed = await sealAtRest(this.key, rest, ctx(chat, id));
    await this.db.put(STORES.messages, { id, chat, ts, sealed } satisfies MessageRow);
  }

  async has(id: string): Promise<boolean> {
    return (await this.db.get<MessageRow>(STORES.messages, id)) !== undefined;
  }

  async get(id: string): Promise<Message | null> {
    const row = await this.db.get<MessageRow>(STORES.messages, id);
    return row ? this.open(row) : null;
  }

  /** The chat's messages in time order; a row that does not open (tampered) is dropped. */
  async list(chat: string): Promise<Message[]> {
    const rows = await this.db.byChat<MessageRow>(chat);
    const out: Message[] = [];
    for (const row of rows) {
      const m = await this.open(row);
      if (m) out.push(m);
    }
    return out;
  }

  private async open(row: MessageRow): Promise<Message | null> {
    try {
      const rest = (await openAtRest(this.key, row.sealed, ctx(row.chat, row.id))) as Omit<Message, 'id' | 'chat' | 'ts'>;
      return { id: row.id, chat: row.chat, ts: row.ts, ...rest };
    } catch {
      return null;
    }
  }

  async metas(): Promise<ChatMeta[]> {
    return this.db.all<ChatMeta>(STORES.chats);
  }

  async meta(chat: string): Promise<ChatMeta> {
    return (await this.db.get<ChatMeta>(STORES.chats, chat)) ?? { chat, lastTs: 0, unread: 0 };
  }

  async putMeta(m: ChatMeta): Promise<void> {
    await this.db.put(STORES.chats, m);
  }

  /** Forgets a chat and its messages (after leaving a room, or being removed from it). */
  async forget(chat: string): Promise<void> {
    await this.db.deleteChat(chat);
  }
}
