/**
 * A small promise layer over IndexedDB, just what the history store needs: one database per
 * account, a few object stores, short transactions. Kept separate from what is stored (conversation-store.ts,
 * chats.ts, trust.ts) so the at-rest encryption reads on its own.
 *
 * Nothing here is readable without the account's keys (docs/CRYPTO.md): the database is named by a
 * tag of the account's index key, every row is found by a tag (`k`, and the indexed `c`, `m`, `t`),
 * and what a row holds is sealed under the history key. The one clear number is `o`, the week of a
 * message, which lets a chat be read a page at a time.
 */
import { atRestTag } from '@svc/sdk';

export const STORES = {
  /** Named values: the saved session, the chat list, room membership, the transfer's state. */
  kv: 'kv',
  /** Records of every chat (index `chat_order` on [c, o], index `mid` on m). */
  messages: 'messages',
  chats: 'chats',
  pins: 'pins',
  /** Edits, reactions and receipts waiting for their target (index `target` on t, `sender` on f, `sender_chat` on s). */
  pending: 'pending',
  /** Messages not yet accepted by the service. */
  outbox: 'outbox',
} as const;
export type StoreName = (typeof STORES)[keyof typeof STORES];

/**
 * 3: rows keyed and indexed by tags, under a database named by a tag. Versions 1 and 2 lived in a
 * database named by the nick with chat ids and times in the clear; legacy.ts reads them once.
 * 4: waiting actions are also indexed by the tags of their sender and of sender and chat, so their
 * caps are counted without opening rows; rows of before do not open under the new layout and go
 * at the next start.
 */
const VERSION = 4;

/** A stored row: found by its tag, the rest sealed (and, for messages, indexed by tags). */
export interface Row {
  k: string;
}

/** The week a message time falls in: the one clear value of a message row (see `o`). */
export const BUCKET_MS = 7 * 24 * 60 * 60 * 1000;
export const bucketOf = (ts: number): number => Math.floor(ts / BUCKET_MS);

/** The database of the account whose index key this is: `svc-` and a tag, nothing of the nick. */
export async function accountDbName(indexKey: CryptoKey): Promise<string> {
  return `svc-${await atRestTag(indexKey, 'db')}`;
}

export function isAccountDbName(name: string): boolean {
  return /^svc-[A-Za-z0-9_-]{22}$/.test(name);
}

export function done<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error ?? new Error('IndexedDB request failed'));
  });
}

export function committed(tx: IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error ?? new Error('IndexedDB write failed'));
    tx.onabort = () => reject(tx.error ?? new Error('IndexedDB write aborted'));
  });
}

/**
 * Opens a database that already exists, at the version it has, as it is (an old layout too),
 * without creating one: a missing database's creation is aborted.
 */
export function openExisting(name: string): Promise<IDBDatabase | null> {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(name);
    let absent = false;
    req.onupgradeneeded = () => {
      absent = true;
      req.transaction!.abort();
    };
    req.onsuccess = () => resolve(req.result);
    req.onerror = (event) => {
      if (!absent) return reject(req.error ?? new Error('IndexedDB open failed'));
      event.preventDefault();
      resolve(null);
    };
  });
}

/**
 * Deletes a database. `blocked`: another connection (a tab of an older version) holds it open, and
 * it goes once that one closes; nobody waits for that.
 */
export function deleteDatabase(name: string): Promise<'deleted' | 'blocked'> {
  return new Promise((resolve, reject) => {
    const req = indexedDB.deleteDatabase(name);
    req.onsuccess = () => resolve('deleted');
    req.onblocked = () => resolve('blocked');
    req.onerror = () => reject(req.error ?? new Error('IndexedDB delete failed'));
  });
}

function upgrade(db: IDBDatabase, tx: IDBTransaction): void {
  if (!db.objectStoreNames.contains(STORES.kv)) db.createObjectStore(STORES.kv);
  if (!db.objectStoreNames.contains(STORES.messages)) {
    const messages = db.createObjectStore(STORES.messages, { keyPath: 'k' });
    messages.createIndex('chat_order', ['c', 'o']);
    messages.createIndex('mid', 'm');
  }
  if (!db.objectStoreNames.contains(STORES.chats)) db.createObjectStore(STORES.chats, { keyPath: 'k' });
  if (!db.objectStoreNames.contains(STORES.pins)) db.createObjectStore(STORES.pins, { keyPath: 'k' });
  if (!db.objectStoreNames.contains(STORES.pending)) db.createObjectStore(STORES.pending, { keyPath: 'k' }).createIndex('target', 't');
  const pending = tx.objectStore(STORES.pending);
  if (!pending.indexNames.contains('sender')) pending.createIndex('sender', 'f');
  if (!pending.indexNames.contains('sender_chat')) pending.createIndex('sender_chat', 's');
  if (!db.objectStoreNames.contains(STORES.outbox)) db.createObjectStore(STORES.outbox, { keyPath: 'k' });
}

/** Every string key that starts with `prefix` (the app's keys are ASCII). */
const prefixRange = (prefix: string) => IDBKeyRange.bound(prefix, `${prefix}\uffff`);

/** A chat's rows: those of its tag, every week. */
const chatRange = (c: string) => IDBKeyRange.bound([c, -Infinity], [c, Infinity]);

export class Db {
  private constructor(
    private readonly db: IDBDatabase,
    readonly name: string,
  ) {
    // Another tab deleting the account's database must not wait for this one forever.
    db.onversionchange = () => db.close();
  }

  static async open(name: string): Promise<Db> {
    const req = indexedDB.open(name, VERSION);
    req.onupgradeneeded = () => upgrade(req.result, req.transaction!);
    return new Db(await done(req), name);
  }

  static async destroy(name: string): Promise<void> {
    await deleteDatabase(name);
  }

  close(): void {
    this.db.close();
  }

  private store(name: StoreName, mode: IDBTransactionMode): IDBObjectStore {
    return this.db.transaction(name, mode).objectStore(name);
  }

  get<T>(name: StoreName, key: IDBValidKey): Promise<T | undefined> {
    return done(this.store(name, 'readonly').get(key)) as Promise<T | undefined>;
  }

  /** Resolves once the write is committed, so a caller may acknowledge what it stored. */
  put(name: StoreName, value: unknown, key?: IDBValidKey): Promise<void> {
    const tx = this.db.transaction(name, 'readwrite');
    tx.objectStore(name).put(value, key);
    return committed(tx);
  }

  /**
   * Writes `value` under `key` unless the value stored there now matches `refuse`, in one
   * transaction (so no other tab's write can fall between the look and the write). Resolves
   * whether it wrote, once committed.
   */
  async putUnless(name: StoreName, key: IDBValidKey, value: unknown, refuse: (stored: unknown) => boolean): Promise<boolean> {
    const tx = this.db.transaction(name, 'readwrite');
    const store = tx.objectStore(name);
    const stored: unknown = await done(store.get(key));
    const write = !refuse(stored);
    if (write) store.put(value, key);
    await committed(tx);
    return write;
  }

  /** Writes rows of one store in one transaction (the move of an old database). */
  putAll(name: StoreName, rows: Row[]): Promise<void> {
    const tx = this.db.transaction(name, 'readwrite');
    for (const row of rows) tx.objectStore(name).put(row);
    return committed(tx);
  }

  async delete(name: StoreName, key: IDBValidKey | IDBKeyRange): Promise<void> {
    await done(this.store(name, 'readwrite').delete(key));
  }

  /** Rows of a store, or of an index's `key` when given. */
  count(name: StoreName, index?: { name: string; key: IDBValidKey }): Promise<number> {
    const store = this.store(name, 'readonly');
    return done(index ? store.index(index.name).count(index.key) : store.count());
  }

  /** The keys of a store that are strings starting with `prefix`. */
  keysWithPrefix(name: StoreName, prefix: string): Promise<string[]> {
    return done(this.store(name, 'readonly').getAllKeys(prefixRange(prefix))) as Promise<string[]>;
  }

  /** Deletes the rows of a store whose keys are strings starting with `prefix`. */
  deletePrefix(name: StoreName, prefix: string): Promise<void> {
    return this.delete(name, prefixRange(prefix));
  }

  all<T>(name: StoreName): Promise<T[]> {
    return done(this.store(name, 'readonly').getAll()) as Promise<T[]>;
  }

  /** Rows whose index `index` equals `key`. */
  byIndex<T>(name: StoreName, index: string, key: IDBValidKey): Promise<T[]> {
    return done(this.store(name, 'readonly').index(index).getAll(key)) as Promise<T[]>;
  }

  /**
   * The message rows of the chat whose tag is `chatTag`, of the weeks from `first` to `last` (all
   * when not given), in no particular order (they are sealed). One read: far quicker than a
   * cursor over as many rows.
   */
  chatRows<T>(chatTag: string, first = -Infinity, last = Infinity): Promise<T[]> {
    return done(
      this.store(STORES.messages, 'readonly')
        .index('chat_order')
        .getAll(IDBKeyRange.bound([chatTag, first], [chatTag, last])),
    ) as Promise<T[]>;
  }

  /** The newest week from `first` to `last` that holds a row of the chat tagged `chatTag`, if any. */
  async newestWeek(chatTag: string, first = -Infinity, last = Infinity): Promise<number | undefined> {
    const req = this.store(STORES.messages, 'readonly')
      .index('chat_order')
      .openKeyCursor(IDBKeyRange.bound([chatTag, first], [chatTag, last]), 'prev');
    const cur = await done(req);
    return cur ? (cur.key as [string, number])[1] : undefined;
  }

  /** Deletes the chat's message rows and its chat-list row in one transaction. */
  async deleteChat(chatTag: string, metaKey: string): Promise<void> {
    const tx = this.db.transaction([STORES.messages, STORES.chats], 'readwrite');
    const req = tx.objectStore(STORES.messages).index('chat_order').openKeyCursor(chatRange(chatTag));
    req.onsuccess = () => {
      const cur = req.result;
      if (!cur) return;
      tx.objectStore(STORES.messages).delete(cur.primaryKey);
      cur.continue();
    };
    tx.objectStore(STORES.chats).delete(metaKey);
    await committed(tx);
  }
}
