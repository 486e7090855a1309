/**
 * A small promise layer over IndexedDB, just what the history store needs: one database per
 * account, a few object stores, single-request transactions. Kept separate from what is stored
 * (history.ts) so the at-rest encryption reads on its own.
 */

export const STORES = {
  kv: 'kv',
  messages: 'messages',
  chats: 'chats',
  pins: 'pins',
  /** Edits, reactions and receipts waiting for their target (index `target`). */
  pending: 'pending',
  /** Messages not yet accepted by the service. */
  outbox: 'outbox',
} as const;
export type StoreName = (typeof STORES)[keyof typeof STORES];

/** 2: the conversation layer (pending, outbox, the `mid` index for the duplicate check). */
const VERSION = 2;

function done<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error ?? new Error('IndexedDB request failed'));
  });
}

function upgrade(db: IDBDatabase, tx: IDBTransaction): void {
  if (!db.objectStoreNames.contains(STORES.kv)) db.createObjectStore(STORES.kv);
  const messages = db.objectStoreNames.contains(STORES.messages) ? tx.objectStore(STORES.messages) : db.createObjectStore(STORES.messages, { keyPath: 'id' });
  if (!messages.indexNames.contains('chat_ts')) messages.createIndex('chat_ts', ['chat', 'ts']);
  // The plaintext's random id (never the sender): the duplicate check looks it up.
  if (!messages.indexNames.contains('mid')) messages.createIndex('mid', 'mid');
  if (!db.objectStoreNames.contains(STORES.chats)) db.createObjectStore(STORES.chats, { keyPath: 'chat' });
  if (!db.objectStoreNames.contains(STORES.pins)) db.createObjectStore(STORES.pins, { keyPath: 'nick' });
  if (!db.objectStoreNames.contains(STORES.pending)) db.createObjectStore(STORES.pending, { keyPath: 'id' }).createIndex('target', 'target');
  if (!db.objectStoreNames.contains(STORES.outbox)) db.createObjectStore(STORES.outbox, { keyPath: 'id' });
}

export function dbName(nick: string): string {
  return `svc:${nick}`;
}

export class Db {
  private constructor(private readonly db: IDBDatabase) {
    // Another tab deleting the account's database must not wait for this one forever.
    db.onversionchange = () => db.close();
  }

  static async open(nick: string): Promise<Db> {
    const req = indexedDB.open(dbName(nick), VERSION);
    req.onupgradeneeded = () => upgrade(req.result, req.transaction!);
    return new Db(await done(req));
  }

  static async destroy(nick: string): Promise<void> {
    await done(indexedDB.deleteDatabase(dbName(nick)) as IDBRequest<unknown>);
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
    return new Promise((resolve, reject) => {
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error ?? new Error('IndexedDB write failed'));
      tx.onabort = () => reject(tx.error ?? new Error('IndexedDB write aborted'));
    });
  }

  async delete(name: StoreName, key: IDBValidKey | IDBKeyRange): Promise<void> {
    await done(this.store(name, 'readwrite').delete(key));
  }

  count(name: StoreName): Promise<number> {
    return done(this.store(name, 'readonly').count());
  }

  all<T>(name: StoreName): Promise<T[]> {
    return done(this.store(name, 'readonly').getAll()) as Promise<T[]>;
  }

  /** Records of one chat in time order (the compound index chat_ts). */
  byChat<T>(chat: string): Promise<T[]> {
    const idx = this.store(STORES.messages, 'readonly').index('chat_ts');
    const range = IDBKeyRange.bound([chat, -Infinity], [chat, Infinity]);
    return done(idx.getAll(range)) as Promise<T[]>;
  }

  /** Records whose index `index` equals `key`. */
  byIndex<T>(name: StoreName, index: string, key: IDBValidKey): Promise<T[]> {
    return done(this.store(name, 'readonly').index(index).getAll(key)) as Promise<T[]>;
  }

  /**
   * The newest `limit` records of a chat (index chat_ts) strictly before `before` (ts, then id),
   * oldest first: opening a long chat reads one page, not the whole history.
   */
  newestOfChat<T extends { id: string; ts: number }>(chat: string, limit: number, before?: { ts: number; id: string }): Promise<T[]> {
    const idx = this.store(STORES.messages, 'readonly').index('chat_ts');
    const upper = before ? before.ts : Infinity;
    const req = idx.openCursor(IDBKeyRange.bound([chat, -Infinity], [chat, upper]), 'prev');
    const out: T[] = [];
    return new Promise((resolve, reject) => {
      req.onerror = () => reject(req.error ?? new Error('IndexedDB read failed'));
      req.onsuccess = () => {
        const cur = req.result;
        if (!cur || out.length >= limit) return resolve(out.reverse());
        const v = cur.value as T;
        if (!before || v.ts < before.ts || (v.ts === before.ts && v.id < before.id)) out.push(v);
        cur.continue();
      };
    });
  }

  async deleteChat(chat: string): Promise<void> {
    const tx = this.db.transaction([STORES.messages, STORES.chats], 'readwrite');
    const idx = tx.objectStore(STORES.messages).index('chat_ts');
    const req = idx.openKeyCursor(IDBKeyRange.bound([chat, -Infinity], [chat, Infinity]));
    req.onsuccess = () => {
      const cur = req.result;
      if (!cur) return;
      tx.objectStore(STORES.messages).delete(cur.primaryKey);
      cur.continue();
    };
    tx.objectStore(STORES.chats).delete(chat);
    await new Promise<void>((resolve, reject) => {
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error ?? new Error('IndexedDB delete failed'));
    });
  }
}
