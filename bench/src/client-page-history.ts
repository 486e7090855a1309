/**
 * The large history the page figures start with (client-page-large.ts): `total` messages spread
 * evenly over a list of DMs, about five minutes apart over the last year (so each chat's records
 * fall in every week of it), all read; their rows made by the app's own store code under the
 * account's keys, with each chat's list row and read marker, and the search index as the app
 * keeps it once built (the SDK's SearchStore writing its manifest and parts through the same store).
 */
import { randomBytes } from 'node:crypto';
import { readKey, SearchStore, type ChatId, type ChatMessage, type ConversationStore } from '@svc/sdk';
// The app's own store code, compiled for Node by packages/web/unit (the web unit tests' build).
import { metaRow } from '../../packages/web/dist/node/src/app/chats.js';
import { IdbConversationStore } from '../../packages/web/dist/node/src/app/conversation-store.js';
import { STORES, type Db } from '../../packages/web/dist/node/src/app/idb.js';
import { Tags } from '../../packages/web/dist/node/src/app/tags.js';
import { RowRecorder, ulid, WORDS, type Seed } from './client-page-seed.js';

export interface HistorySeed {
  seed: Seed;
  /** Per chat (by peer), its newest record's id: what the log shows at its bottom when opened. */
  newest: Map<string, string>;
  /** The peers in the chat list's order, newest activity first. */
  order: string[];
  /** Search index parts written. */
  parts: number;
}

const YEAR_MS = 365 * 24 * 60 * 60 * 1000;
/** Records made and sealed at once: WebCrypto's calls overlap in Node's thread pool. */
const BATCH = 2_000;

export async function historySeed(
  keys: { history: CryptoKey; index: CryptoKey },
  me: string,
  peers: string[],
  total: number,
  log: (line: string) => void = () => undefined,
): Promise<HistorySeed> {
  const recorder = new RowRecorder();
  const tags = new Tags(keys.index);
  const store = new IdbConversationStore(recorder as unknown as Db, keys.history, tags);
  const step = Math.floor(YEAR_MS / total);
  const start = Date.now() - 60_000 - step * total;
  // A fixed shuffle of the chats, so neighbours in time are in different chats but each gets its share.
  const slot = (i: number) => peers[(i * 7919) % peers.length]!;
  const newestOf = new Map<string, ChatMessage>();
  const plain: ChatMessage[] = [];
  const t0 = performance.now();
  for (let from = 0; from < total; from += BATCH) {
    const batch: ChatMessage[] = [];
    for (let i = from; i < Math.min(total, from + BATCH); i++) {
      const peer = slot(i);
      const ts = start + i * step;
      const mine = Math.floor(i / 3) % 2 === 1;
      const body = Array.from({ length: 4 + (i % 14) }, (_, j) => WORDS[(i * 7 + j * 3) % WORDS.length]).join(' ') + ` #${i}`;
      const m: ChatMessage = {
        id: ulid(ts),
        chat: `dm:${peer}`,
        ts,
        from: mine ? me : peer,
        sentAt: ts - 300,
        mid: randomBytes(8).toString('hex'),
        kind: 'text',
        body,
      };
      if (mine) Object.assign(m, { state: 'sent', delivered: [peer], read: [peer] });
      else m.reported = 'read';
      batch.push(m);
      newestOf.set(peer, m);
    }
    const rows = await Promise.all(batch.map((m) => store.messageRow(m)));
    for (const row of rows) await recorder.put(STORES.messages, row);
    plain.push(...batch);
    if ((from / BATCH) % 10 === 9) log(`  ${from + BATCH} records sealed (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  }
  for (const [peer, m] of newestOf) {
    const chat: ChatId = `dm:${peer}`;
    await store.putMeta(readKey(chat), { ts: m.ts, id: m.id });
    const preview = `${m.from === me ? 'You' : peer}: ${m.body}`;
    await recorder.put(STORES.chats, await metaRow(keys.history, tags, { chat, lastTs: m.ts, unread: 0, preview }));
  }
  // The index the app builds at its first search and keeps: built here from the plain records, its
  // manifest and parts sealed by the app's store into the same rows.
  const records = {
    all: () => Promise.resolve(plain),
    getMeta: (k: string) => store.getMeta(k),
    putMeta: (k: string, v: unknown) => store.putMeta(k, v),
    removeMeta: (k: string) => store.removeMeta(k),
  } as unknown as ConversationStore;
  const search = new SearchStore(records);
  await search.index();
  await search.close();
  const parts = [...(recorder.rows.get(STORES.kv)?.keys() ?? [])].length - peers.length - 1;
  const order = [...newestOf.entries()].sort((a, b) => b[1].ts - a[1].ts).map(([peer]) => peer);
  return { seed: recorder.dump(), newest: new Map([...newestOf].map(([peer, m]) => [peer, m.id])), order, parts };
}
