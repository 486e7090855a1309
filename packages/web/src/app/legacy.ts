/**
 * The database of versions 1 and 2 of the app, read once to move it (migrate.ts). It is named
 * `svc:<nick>` and keeps in the clear what the tagged layout (idb.ts) hides: message rows
 * `{id, chat, ts, mid?, sealed}` indexed by [chat, ts] and mid, waiting actions `{id, target,
 * sealed}`, outbox items `{id, sealed}`, chat rows `{chat, sealed}` (or, older still, `{chat,
 * lastTs, unread}` with nothing sealed), pins `{nick, sealed}`, and `kv` entries named
 * `meta:<key>`. Its sealed parts name their row in the AAD context (`msg|<chat>|<id>`, ...).
 */
import { openAtRest, type ChatId, type ChatMessage, type OutboxItem, type PendingAction, type Sealed } from '@svc/sdk';
import type { ChatMeta } from './chats.js';
import { done, openExisting } from './idb.js';
import type { Pin } from './trust.js';

export const legacyDbName = (nick: string): string => `svc:${nick}`;

/** Opens the old database if this browser has one for the nick, at the version it has. */
export function openLegacy(nick: string): Promise<IDBDatabase | null> {
  return openExisting(legacyDbName(nick));
}

interface MessageRow {
  id: string;
  chat: string;
  ts: number;
  sealed: Sealed;
}

/** A record written before the conversation layer (one state field, no kind). */
interface LegacyContent {
  from: string;
  body?: string;
  sentAt?: number;
  state: 'received' | 'sending' | 'sent' | 'failed' | 'undecryptable';
  note?: string;
}

/** Reads a record of either old format; an old unsent one becomes "Not sent", so Retry can send it. */
function fromContent(row: MessageRow, content: Omit<ChatMessage, 'id' | 'chat' | 'ts'> | LegacyContent): ChatMessage {
  const base = { id: row.id, chat: row.chat as ChatId, ts: row.ts };
  if ('kind' in content) return { ...base, ...content };
  if (content.state === 'undecryptable')
    return { ...base, from: content.from, sentAt: row.ts, kind: 'undecryptable', ...(content.note ? { note: content.note } : {}) };
  const message: ChatMessage = { ...base, from: content.from, sentAt: content.sentAt ?? row.ts, kind: 'text', body: content.body ?? '' };
  if (content.state === 'sent') message.state = 'sent';
  if (content.state === 'sending' || content.state === 'failed') {
    message.state = 'failed';
    message.note = content.note ?? 'This message was not sent.';
  }
  return message;
}

/** What did not open (altered rows): they were as if absent before, and are not moved. */
export interface Skipped {
  count: number;
}

async function opened<T>(key: CryptoKey, sealed: Sealed, context: string, skipped: Skipped): Promise<T | undefined> {
  try {
    return (await openAtRest(key, sealed, context)) as T;
  } catch {
    skipped.count += 1;
    return undefined;
  }
}

function all<T>(db: IDBDatabase, store: string): Promise<T[]> {
  if (!db.objectStoreNames.contains(store)) return Promise.resolve([]);
  return done(db.transaction(store, 'readonly').objectStore(store).getAll()) as Promise<T[]>;
}

/**
 * The message records in pages of `size` (the old store is keyed by id), so a long history is
 * never held all at once.
 */
export async function* legacyMessages(db: IDBDatabase, key: CryptoKey, size: number, skipped: Skipped): AsyncGenerator<ChatMessage[]> {
  if (!db.objectStoreNames.contains('messages')) return;
  let after: string | undefined;
  for (;;) {
    const range = after === undefined ? undefined : IDBKeyRange.lowerBound(after, true);
    const rows = (await done(db.transaction('messages', 'readonly').objectStore('messages').getAll(range, size))) as MessageRow[];
    if (rows.length === 0) return;
    after = rows[rows.length - 1]!.id;
    const page: ChatMessage[] = [];
    for (const row of rows) {
      const content = await opened<Omit<ChatMessage, 'id' | 'chat' | 'ts'> | LegacyContent>(key, row.sealed, `msg|${row.chat}|${row.id}`, skipped);
      if (content) page.push(fromContent(row, content));
    }
    yield page;
  }
}

export async function legacyPending(db: IDBDatabase, key: CryptoKey, skipped: Skipped): Promise<PendingAction[]> {
  const out: PendingAction[] = [];
  for (const row of await all<{ id: string; sealed: Sealed }>(db, 'pending')) {
    const pending = await opened<PendingAction>(key, row.sealed, `pending|${row.id}`, skipped);
    if (pending) out.push(pending);
  }
  return out;
}

export async function legacyOutbox(db: IDBDatabase, key: CryptoKey, skipped: Skipped): Promise<OutboxItem[]> {
  const out: OutboxItem[] = [];
  for (const row of await all<{ id: string; sealed: Sealed }>(db, 'outbox')) {
    const item = await opened<OutboxItem>(key, row.sealed, `outbox|${row.id}`, skipped);
    if (item) out.push(item);
  }
  return out;
}

export async function legacyChats(db: IDBDatabase, key: CryptoKey, skipped: Skipped): Promise<ChatMeta[]> {
  const out: ChatMeta[] = [];
  for (const row of await all<{ chat: string; sealed: Sealed } | ChatMeta>(db, 'chats')) {
    if (!('sealed' in row)) {
      out.push({ chat: row.chat, lastTs: row.lastTs, unread: row.unread });
      continue;
    }
    const rest = await opened<Omit<ChatMeta, 'chat'>>(key, row.sealed, `chat|${row.chat}`, skipped);
    if (rest) out.push({ ...rest, chat: row.chat });
  }
  return out;
}

export async function legacyPins(db: IDBDatabase, key: CryptoKey, skipped: Skipped): Promise<[string, Pin][]> {
  const out: [string, Pin][] = [];
  for (const row of await all<{ nick: string; sealed: Sealed }>(db, 'pins')) {
    const pin = await opened<Pin>(key, row.sealed, `pin|${row.nick}`, skipped);
    if (pin) out.push([row.nick, pin]);
  }
  return out;
}

/**
 * The `kv` entries worth keeping: the conversation layer's named values (opened, to be sealed
 * again under their tag) and the chat list and membership, whose sealing names no row
 * (`kv|chatlist`, `kv|members`) and which move as they are. The saved session is written anew.
 */
export async function legacyKv(db: IDBDatabase, key: CryptoKey, skipped: Skipped): Promise<{ meta: [string, unknown][]; asIs: [string, unknown][] }> {
  const meta: [string, unknown][] = [];
  const asIs: [string, unknown][] = [];
  if (!db.objectStoreNames.contains('kv')) return { meta, asIs };
  const store = db.transaction('kv', 'readonly').objectStore('kv');
  const [keys, values] = await Promise.all([done(store.getAllKeys()), done(store.getAll())]);
  for (let i = 0; i < keys.length; i++) {
    const name = keys[i];
    if (typeof name !== 'string') continue;
    if (name === 'chatlist' || name === 'members') asIs.push([name, values[i]]);
    if (!name.startsWith('meta:')) continue;
    const value = await opened<unknown>(key, values[i] as Sealed, `meta|${name.slice(5)}`, skipped);
    if (value !== undefined) meta.push([name.slice(5), value]);
  }
  return { meta, asIs };
}
