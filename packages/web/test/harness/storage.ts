/**
 * Everything a page's origin keeps in IndexedDB and localStorage, read raw from inside the page
 * (no app code): every database's name and version, every store's rows (key and value) and every
 * index's keys. What the app stores is judged on this, as someone holding the browser profile
 * would see it.
 */
import type { Page } from 'playwright-core';

export interface StoreDump {
  name: string;
  rows: { key: unknown; value: unknown }[];
  indexes: { name: string; keys: unknown[] }[];
}

export interface DbDump {
  name: string;
  version: number;
  stores: StoreDump[];
}

export interface StorageDump {
  databases: DbDump[];
  localStorage: Record<string, string>;
}

export function dumpStorage(page: Page): Promise<StorageDump> {
  return page.evaluate(async () => {
    const done = <T>(req: IDBRequest<T>) =>
      new Promise<T>((resolve, reject) => {
        req.onsuccess = () => resolve(req.result);
        req.onerror = () => reject(req.error ?? new Error('IndexedDB request failed'));
      });
    const indexKeys = (index: IDBIndex) =>
      new Promise<unknown[]>((resolve, reject) => {
        const keys: unknown[] = [];
        const req = index.openKeyCursor();
        req.onerror = () => reject(req.error ?? new Error('IndexedDB request failed'));
        req.onsuccess = () => {
          const cur = req.result;
          if (!cur) return resolve(keys);
          keys.push(cur.key);
          cur.continue();
        };
      });
    const databases: DbDump[] = [];
    for (const info of await indexedDB.databases()) {
      if (!info.name) continue;
      const db = await done(indexedDB.open(info.name));
      const stores: StoreDump[] = [];
      for (const name of Array.from(db.objectStoreNames)) {
        const store = db.transaction(name, 'readonly').objectStore(name);
        const [keys, values] = await Promise.all([done(store.getAllKeys()), done(store.getAll())]);
        const indexes: { name: string; keys: unknown[] }[] = [];
        for (const idx of Array.from(store.indexNames))
          indexes.push({ name: idx, keys: await indexKeys(db.transaction(name, 'readonly').objectStore(name).index(idx)) });
        stores.push({ name, rows: keys.map((key, i) => ({ key, value: values[i] })), indexes });
      }
      databases.push({ name: db.name, version: db.version, stores });
      db.close();
    }
    const local: Record<string, string> = {};
    for (let i = 0; i < localStorage.length; i++) {
      const key = localStorage.key(i)!;
      local[key] = localStorage.getItem(key)!;
    }
    return { databases, localStorage: local };
  });
}

/** A ULID (message ids are ULIDs: their first ten characters are the creation time) as a whole string. */
const ULID = /"0[0-9A-HJKMNP-TV-Z]{25}"/;
/** Anything that reads as a time: a number of seconds or milliseconds since 1970, or an ISO date. */
const TIME_TEXT = /\d{10,}|\d{4}-\d\d-\d\dT/;

/**
 * What of `needles` (nicks, chat ids, texts) the JSON form of `value` contains, plus "a time" when
 * it holds a number or text that reads as a timestamp and "a message id" for a ULID.
 */
export function clearFound(value: unknown, needles: string[]): string[] {
  const text = JSON.stringify(value) ?? '';
  const found = needles.filter((n) => text.includes(n));
  let time = TIME_TEXT.test(text);
  const walk = (v: unknown): void => {
    if (typeof v === 'number' && Math.abs(v) >= 1e9) time = true;
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(value);
  if (time) found.push('a time');
  if (ULID.test(text)) found.push('a message id');
  return found;
}
