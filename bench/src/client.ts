/**
 * `npm run bench:client`: the client-side figures of the conversation layer, in Node over the
 * SDK's own code (WebCrypto AES-GCM, the same as in the browser; IndexedDB's own time is not in
 * them). With 10,000 sealed records in one chat:
 * - opening the chat: reading and opening (decrypting) its newest page of 100 records;
 * - the first search: opening all 10,000 records and indexing them;
 * - a search: one query over the 10,000 indexed records;
 * - opening the chat with its newest 2,000 records unread (BENCH_UNREAD): the SDK's unreadSince
 *   (the records after the read marker, counted) and the 20 records the log reads above the
 *   first unread one, where "New messages" goes. The browser's rendering is not in this figure;
 * - disappearing messages: 1,000 messages of the chat expiring at once — expireDue() over the
 *   SDK's MemoryStore (IndexedDB's own time not in it) plus the app's search index drop; the whole
 *   of it bounds the longest task it could make (a browser "long task" is one over 100 ms).
 * Prints a markdown table of min / median / max over the runs (docs/BENCHMARKS.md).
 *
 * Then the same two figures in the built web client in Chromium over the real service
 * (client-page.ts): the click on a chat with 2,000 unread to "New messages" in view, and 1,000
 * messages expiring at once on screen (the longest task, and the time until they are gone).
 * BENCH_PAGE=0 leaves that part out; BENCH_PAGE_RUNS and BENCH_EXPIRY_RUNS set its runs;
 * BENCH_PAGE_PROFILE=<dir> writes the page's CPU profile of the first opening and expiry there.
 */
import { performance } from 'node:perf_hooks';
import { pageFigures, pageMissing } from './client-page.js';
import {
  expireDue,
  MemoryStore,
  openAtRest,
  readKey,
  sealAtRest,
  SearchIndex,
  trackExpiry,
  unreadSince,
  type ChatMessage,
  type ChatRange,
  type ConversationStore,
  type Sealed,
} from '@svc/sdk';

const N = Number(process.env.BENCH_RECORDS ?? 10_000);
const PAGE = 100;
const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const EXPIRING = Number(process.env.BENCH_EXPIRING ?? 1_000);
const UNREAD = Number(process.env.BENCH_UNREAD ?? 2_000);
const WORDS = ['meet', 'lunch', 'tomorrow', 'project', 'deadline', 'coffee', 'train', 'late', 'photo', 'plan', 'weekend', 'call'];

function stats(xs: number[]): { min: number; median: number; max: number } {
  const s = [...xs].sort((a, b) => a - b);
  return { min: s[0]!, median: s[Math.floor(s.length / 2)]!, max: s.at(-1)! };
}

async function main(): Promise<void> {
  const key = await crypto.subtle.importKey('raw', crypto.getRandomValues(new Uint8Array(32)), 'AES-GCM', false, ['encrypt', 'decrypt']);
  const rows: { id: string; ts: number; sealed: Sealed }[] = [];
  const t0 = 1_800_000_000_000;
  for (let i = 0; i < N; i++) {
    const body = Array.from({ length: 8 + (i % 12) }, (_, j) => WORDS[(i * 7 + j * 3) % WORDS.length]).join(' ') + ` #${i}`;
    const id = `m${String(i).padStart(8, '0')}`;
    const m: Omit<ChatMessage, 'id' | 'chat' | 'ts'> = { from: i % 2 ? 'alice' : 'bob', sentAt: t0 + i * 1000, kind: 'text', body };
    rows.push({ id, ts: t0 + i * 1000, sealed: await sealAtRest(key, m, `msg|dm:bob|${id}`) });
  }
  const open = (r: (typeof rows)[number]) => openAtRest(key, r.sealed, `msg|dm:bob|${r.id}`);
  const record = async (r: (typeof rows)[number]) =>
    ({ ...((await open(r)) as object), id: r.id, chat: 'dm:bob', ts: r.ts }) as unknown as ChatMessage;
  // The store as the web app's reads it: an index range of sealed records, each opened on the way out.
  const readTo = rows[N - UNREAD - 1]!;
  const store = {
    async chat(_chat: string, o: ChatRange = {}) {
      const start = o.after ? rows.findIndex((r) => r.id === o.after!.id) + 1 : 0;
      const end = o.before ? rows.findIndex((r) => r.id === o.before!.id) : rows.length;
      return Promise.all(rows.slice(Math.max(start, end - (o.limit ?? end)), end).map(record));
    },
    async getMeta(k: string) {
      return k === readKey('dm:bob') ? { ts: readTo.ts, id: readTo.id } : undefined;
    },
  } as unknown as ConversationStore;

  const openChat: number[] = [];
  const firstSearch: number[] = [];
  const search: number[] = [];
  const openUnread: number[] = [];
  let index: SearchIndex;
  for (let run = 0; run < RUNS; run++) {
    let t = performance.now();
    const page = await Promise.all(rows.slice(-PAGE).map(open));
    openChat.push(performance.now() - t);
    if (page.length !== PAGE) throw new Error('page');

    t = performance.now();
    const unread = await unreadSince(store, 'dm:bob', 'carol');
    if (unread.count !== UNREAD) throw new Error(`${unread.count} unread`);
    const log = [...(await store.chat('dm:bob', { before: unread.since[0]!, limit: 20 })), ...unread.since];
    openUnread.push(performance.now() - t);
    if (!log.some((m) => m.id === unread.first)) throw new Error('the first unread is not on the page');

    t = performance.now();
    index = new SearchIndex();
    const all = await Promise.all(
      rows.map(async (r) => ({ ...((await open(r)) as object), id: r.id, chat: 'dm:bob', ts: r.ts }) as unknown as ChatMessage),
    );
    for (const m of all) index.put(m);
    firstSearch.push(performance.now() - t);

    for (const q of ['coffee tomorrow', 'deadline', 'weekend call #99', 'nothing matches this']) {
      t = performance.now();
      index.search(q, 50);
      search.push(performance.now() - t);
    }
  }
  // 1,000 messages whose 30-second timers run out at the same moment, in a chat of N.
  const expiring: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const memory = new MemoryStore();
    const idx = new SearchIndex();
    const timed: ChatMessage[] = [];
    for (let i = 0; i < N; i++) {
      const m: ChatMessage = {
        id: `m${String(i).padStart(8, '0')}`,
        chat: 'dm:bob',
        ts: t0 + i,
        sentAt: t0 + i,
        from: i % 2 ? 'alice' : 'bob',
        kind: 'text',
        body: `${WORDS[i % WORDS.length]} #${i}`,
      };
      if (i >= N - EXPIRING) Object.assign(m, { expire: 30, seenAt: t0 });
      await memory.put(m);
      idx.put(m);
      if (m.expire) timed.push(m);
    }
    await trackExpiry(memory, timed);
    const t = performance.now();
    const r = await expireDue(memory, t0 + 30_000);
    for (const m of r.records) idx.remove(m.id);
    expiring.push(performance.now() - t);
    if (r.records.length !== EXPIRING) throw new Error(`expired ${r.records.length}`);
  }

  const row = (name: string, xs: number[], target: string) => {
    const s = stats(xs);
    return `| ${name} | ${s.min.toFixed(1)} | ${s.median.toFixed(1)} | ${s.max.toFixed(1)} | ${target} |`;
  };
  console.log(`Client figures, ${N} records in one chat, ${RUNS} runs, Node ${process.version}\n`);
  console.log('| Figure | min ms | median ms | max ms | target |');
  console.log('|---|---|---|---|---|');
  console.log(row(`open a chat: newest ${PAGE} of ${N} records opened`, openChat, '< 200 ms'));
  console.log(row(`open a chat with ${UNREAD} unread: the records after the read marker, and 20 above`, openUnread, '≤ 200 ms'));
  console.log(row(`first search: all ${N} records opened and indexed`, firstSearch, 'once per session'));
  console.log(row(`one search over ${N} records`, search, '< 100 ms'));
  console.log(row(`${EXPIRING} messages expiring at once: expireDue() and the search index`, expiring, 'no task > 100 ms'));

  if (process.env.BENCH_PAGE === '0') return;
  const missing = pageMissing();
  if (missing) {
    console.log(`\nThe page figures are left out: ${missing}.`);
    return;
  }
  const p = await pageFigures({
    records: N,
    unread: UNREAD,
    expiring: EXPIRING,
    runs: Number(process.env.BENCH_PAGE_RUNS ?? 7),
    expiryRuns: Number(process.env.BENCH_EXPIRY_RUNS ?? 3),
    ...(process.env.BENCH_PAGE_PROFILE ? { profileDir: process.env.BENCH_PAGE_PROFILE } : {}),
  });
  console.log(
    `\nIn the web client: Chromium ${p.chromium}, ${p.open.length} runs of the opening and ${p.expiryWall.length} of the expiry, load average ${p.load}\n`,
  );
  console.log('| Figure | min ms | median ms | max ms | target |');
  console.log('|---|---|---|---|---|');
  console.log(row(`open a chat of ${N} with ${UNREAD} unread: click → "New messages" in view`, p.open, '≤ 200 ms'));
  console.log(row(`the longest task of that opening`, p.openLongest, '—'));
  console.log(row(`${EXPIRING} messages on screen expiring at once: the longest task`, p.expiryLongest, 'no task > 100 ms'));
  console.log(row(`the longest task while their ${EXPIRING} timers count down`, p.countdownLongest, '—'));
  console.log(row(`${EXPIRING} messages expiring at once: first read → all gone from the log`, p.expiryWall, '—'));
}

await main();
