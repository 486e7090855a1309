/**
 * The history the page figures open (client-page.ts): a DM's records made by the app's own store
 * code under the account's keys, as the rows IndexedDB would hold, and their writing into the
 * page's database.
 */
import { randomBytes } from 'node:crypto';
import type { Page } from 'playwright-core';
import { readKey, timerKey, trackExpiry, type ChatId, type ChatMessage } from '@svc/sdk';
// The app's own store code, compiled for Node by packages/web/unit (the web unit tests' build).
import { metaRow } from '../../packages/web/dist/node/src/app/chats.js';
import { IdbConversationStore } from '../../packages/web/dist/node/src/app/conversation-store.js';
import { STORES, type Db } from '../../packages/web/dist/node/src/app/idb.js';
import { Tags } from '../../packages/web/dist/node/src/app/tags.js';

export const WORDS = ['meet', 'lunch', 'tomorrow', 'project', 'deadline', 'coffee', 'train', 'late', 'photo', 'plan', 'weekend', 'call'];

/** A ULID-shaped id (time, then randomness, in Crockford's base 32), as senders make them. */
export function ulid(ts: number): string {
  const A = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
  let t = '';
  for (let n = ts, i = 0; i < 10; i++, n = Math.floor(n / 32)) t = A[n % 32]! + t;
  return t + Array.from(randomBytes(16), (b) => A[b % 32]).join('');
}

/** Stands in for the IndexedDB layer while the app's store code makes rows: it keeps what it is given. */
export class RowRecorder {
  readonly rows = new Map<string, Map<string, unknown>>();
  get(store: string, key: string): Promise<unknown> {
    return Promise.resolve(this.rows.get(store)?.get(key));
  }
  put(store: string, value: unknown, key?: string): Promise<void> {
    let m = this.rows.get(store);
    if (!m) this.rows.set(store, (m = new Map()));
    m.set(key ?? (value as { k: string }).k, value);
    return Promise.resolve();
  }
  delete(store: string, key: string): Promise<void> {
    this.rows.get(store)?.delete(key);
    return Promise.resolve();
  }
  /** Per store: whether the rows carry their key (`k`), and the [key, row] pairs. */
  dump(): Seed {
    return [...this.rows].map(([store, m]) => ({ store, inline: store !== STORES.kv, entries: [...m] }));
  }
}
export type Seed = { store: string; inline: boolean; entries: [string, unknown][] }[];

export interface ChatSeed {
  chat: ChatId;
  seed: Seed;
  /** The first unread record: "New messages" goes above it. */
  firstUnread: string;
  /** The unread records (under the timer, when there is one). */
  unreadIds: string[];
}

/**
 * A DM of `total` records with `peer`: runs of three messages from one side 40 s apart, 30 minutes
 * between runs (about 10 weeks of history, in the week buckets of the store), the newest `unread`
 * all from the peer and not read yet; `timer` puts them under a timer, seen at `seenAt`.
 */
export async function chatSeed(
  keys: { history: CryptoKey; index: CryptoKey },
  me: string,
  peer: string,
  total: number,
  unread: number,
  timer?: { expire: number; seenAt: number },
): Promise<ChatSeed> {
  const recorder = new RowRecorder();
  const tags = new Tags(keys.index);
  const store = new IdbConversationStore(recorder as unknown as Db, keys.history, tags);
  const chat: ChatId = `dm:${peer}`;
  const ts: number[] = new Array<number>(total);
  ts[total - 1] = Date.now() - 60_000;
  for (let i = total - 1; i > 0; i--) ts[i - 1] = ts[i]! - (i % 3 === 0 ? 30 * 60_000 : 40_000);
  const list: ChatMessage[] = [];
  for (let i = 0; i < total; i++) {
    const isUnread = i >= total - unread;
    const from = isUnread || Math.floor(i / 3) % 2 === 0 ? peer : me;
    const body = Array.from({ length: 4 + (i % 14) }, (_, j) => WORDS[(i * 7 + j * 3) % WORDS.length]).join(' ') + ` #${i}`;
    const m: ChatMessage = {
      id: ulid(ts[i]!),
      chat,
      ts: ts[i]!,
      from,
      sentAt: ts[i]! - 300,
      mid: randomBytes(8).toString('hex'),
      kind: 'text',
      body,
    };
    if (from === me) Object.assign(m, { state: 'sent', delivered: [peer], read: [peer] });
    else m.reported = isUnread ? 'delivered' : 'read';
    if (isUnread && timer) Object.assign(m, timer);
    list.push(m);
    await store.put(m);
  }
  const lastRead = list[total - unread - 1]!;
  await store.putMeta(readKey(chat), { ts: lastRead.ts, id: lastRead.id });
  const unreadList = list.slice(total - unread);
  if (timer) {
    await store.putMeta(timerKey(chat), { seconds: timer.expire, by: peer, sentAt: lastRead.ts + 1, mid: 'benchtimer' });
    await trackExpiry(store, unreadList);
  }
  const newest = list.at(-1)!;
  const meta = { chat, lastTs: newest.ts, unread, preview: `${peer}: ${newest.body}` };
  const row = await metaRow(keys.history, tags, meta);
  await recorder.put(STORES.chats, row);
  return { chat, seed: recorder.dump(), firstUnread: unreadList[0]!.id, unreadIds: unreadList.map((m) => m.id) };
}

/** Writes rows into the account's database, which the app created at sign-in (no upgrade). */
export async function writeSeed(page: Page, name: string, seed: Seed, chunk = 4_000): Promise<void> {
  // A large history goes over in slices, each its own transaction, so no one message to the page is huge.
  if (seed.some((s) => s.entries.length > chunk)) {
    for (const { store, inline, entries } of seed)
      for (let i = 0; i < entries.length; i += chunk) await writeSeed(page, name, [{ store, inline, entries: entries.slice(i, i + chunk) }], chunk);
    return;
  }
  await page.evaluate(
    async ({ name, json }) => {
      const seed = JSON.parse(json) as Seed;
      const db = await new Promise<IDBDatabase>((resolve, reject) => {
        const req = indexedDB.open(name);
        req.onsuccess = () => resolve(req.result);
        req.onerror = () => reject(req.error ?? new Error('open failed'));
      });
      try {
        for (const { store, inline, entries } of seed) {
          const tx = db.transaction(store, 'readwrite');
          const os = tx.objectStore(store);
          for (const [key, row] of entries) {
            if (inline) os.put(row);
            else os.put(row, key);
          }
          await new Promise<void>((resolve, reject) => {
            tx.oncomplete = () => resolve();
            tx.onerror = tx.onabort = () => reject(tx.error ?? new Error(`write to ${store} failed`));
          });
        }
      } finally {
        db.close();
      }
    },
    { name, json: JSON.stringify(seed) },
  );
}
