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
 * With 100,000 sealed records in 200 chats (BENCH_LARGE, BENCH_CHATS; a few busy chats and many
 * quiet ones), the search index kept sealed in the store (SearchStore):
 * - the first search of a session: the manifest and every chat's parts opened, then one query;
 * - a later search: one query over the loaded index;
 * - for comparison, the index built from scratch (every record opened), and its parts written;
 * - the first search after the app stopped before the busiest chat's parts were written (that
 *   chat made again from its records).
 * Prints a markdown table of min / median / max over the runs (docs/BENCHMARKS.md).
 *
 * Then the same two figures in the built web client in Chromium over the real service
 * (client-page.ts): the click on a chat with 2,000 unread to "New messages" in view, and 1,000
 * messages expiring at once on screen (the longest task, and the time until they are gone).
 * BENCH_PAGE=0 leaves that part out; BENCH_PAGE_RUNS and BENCH_EXPIRY_RUNS set its runs;
 * BENCH_PAGE_PROFILE=<dir> writes the page's CPU profile of the first opening and expiry there.
 *
 * Last, the web client over BENCH_LARGE records in BENCH_CHATS chats (client-page-large.ts): app
 * start to the chat list, opening a chat, the first and later searches, and the page's memory.
 * `--only node,page,large` runs some of the three parts; `--help` lists the settings.
 */
import { performance } from 'node:perf_hooks';
import { pageFigures, pageMissing } from './client-page.js';
import { largeFigures, largeTable } from './client-page-large.js';
import {
  expireDue,
  MemoryStore,
  openAtRest,
  readKey,
  sealAtRest,
  SearchIndex,
  SearchStore,
  K_SEARCH_MANIFEST,
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
const LARGE = Number(process.env.BENCH_LARGE ?? 100_000);
const CHATS = Number(process.env.BENCH_CHATS ?? 200);
const BUILD_RUNS = Number(process.env.BENCH_BUILD_RUNS ?? 3);
const LARGE_RUNS = Number(process.env.BENCH_LARGE_RUNS ?? 5);
const PARTS = ['node', 'page', 'large'] as const;
const HELP = `npm run bench:client [-- --only ${PARTS.join(',')}]

  node    the SDK in Node: ${N} records in one chat, and search over ${LARGE} in ${CHATS} chats
  page    the web client in Chromium: a chat of ${N} with ${UNREAD} unread opened, ${EXPIRING} expiring on screen
  large   the web client in Chromium over ${LARGE} messages in ${CHATS} chats: start, opening, search, memory

Settings (environment): BENCH_RECORDS, BENCH_RUNS, BENCH_UNREAD, BENCH_EXPIRING, BENCH_LARGE, BENCH_CHATS,
BENCH_BUILD_RUNS, BENCH_PAGE=0 (no page parts), BENCH_PAGE_RUNS, BENCH_EXPIRY_RUNS, BENCH_LARGE_RUNS,
BENCH_PAGE_PROFILE=<dir> (the pages' CPU profiles of their first runs).
`;
const WORDS = ['meet', 'lunch', 'tomorrow', 'project', 'deadline', 'coffee', 'train', 'late', 'photo', 'plan', 'weekend', 'call'];

function stats(xs: number[]): { min: number; median: number; max: number } {
  const s = [...xs].sort((a, b) => a - b);
  return { min: s[0]!, median: s[Math.floor(s.length / 2)]!, max: s.at(-1)! };
}

/**
 * A store as the web app's keeps it: every record and every named value sealed under the history
 * key (AES-GCM, the record's or value's name in the AAD), opened on each read.
 */
function sealedStore(key: CryptoKey) {
  const rows = new Map<string, { chat: string; ts: number; sealed: Sealed }>();
  const meta = new Map<string, Sealed>();
  const open = async (id: string, r: { sealed: Sealed }) => (await openAtRest(key, r.sealed, `msg|${id}`)) as ChatMessage;
  const byTime = (a: ChatMessage, b: ChatMessage) => a.ts - b.ts || (a.id < b.id ? -1 : 1);
  const store = {
    async put(m: ChatMessage) {
      rows.set(m.id, { chat: m.chat, ts: m.ts, sealed: await sealAtRest(key, m, `msg|${m.id}`) });
    },
    async get(id: string) {
      const r = rows.get(id);
      return r ? open(id, r) : undefined;
    },
    async remove(id: string) {
      rows.delete(id);
    },
    async all() {
      return (await Promise.all([...rows].map(([id, r]) => open(id, r)))).sort(byTime);
    },
    async chat(chat: string) {
      return (await Promise.all([...rows].filter(([, r]) => r.chat === chat).map(([id, r]) => open(id, r)))).sort(byTime);
    },
    async getMeta(k: string) {
      const sealed = meta.get(k);
      return sealed ? openAtRest(key, sealed, `meta|${k}`) : undefined;
    },
    async putMeta(k: string, v: unknown) {
      meta.set(k, await sealAtRest(key, v, `meta|${k}`));
    },
    async removeMeta(k: string) {
      meta.delete(k);
    },
  };
  return { store: store as unknown as ConversationStore, meta };
}

/** A full garbage collection when Node runs with --expose-gc (`npm run bench:client` does). */
const collect = (): void => (globalThis as { gc?: () => void }).gc?.();

/** The search index of LARGE records in CHATS chats, kept sealed in the store. */
async function largeHistory(key: CryptoKey, t0: number) {
  const { store, meta } = sealedStore(key);
  // Chat i gets a share of 1/(i+1): a few busy chats of thousands of records, many of a few hundred.
  const weights = Array.from({ length: CHATS }, (_, i) => 1 / (i + 1));
  const total = weights.reduce((a, b) => a + b, 0);
  const chats: string[] = [];
  weights.forEach((w, i) => {
    for (let k = Math.round((w / total) * LARGE); k > 0 && chats.length < LARGE; k--) chats.push(`room:r${i}`);
  });
  while (chats.length < LARGE) chats.push(`room:r${CHATS - 1}`);
  for (let i = 0; i < LARGE; i++) {
    const body = Array.from({ length: 8 + (i % 12) }, (_, j) => WORDS[(i * 7 + j * 3) % WORDS.length]).join(' ') + ` #${i}`;
    const chat = chats[(i * 7919) % LARGE]!;
    await store.put({
      id: `m${String(i).padStart(8, '0')}`,
      chat: chat as ChatMessage['chat'],
      ts: t0 + i * 1000,
      sentAt: t0 + i * 1000,
      from: i % 2 ? 'alice' : 'bob',
      kind: 'text',
      body,
    });
  }
  const build: number[] = [];
  const write: number[] = [];
  for (let run = 0; run < BUILD_RUNS; run++) {
    await store.removeMeta(K_SEARCH_MANIFEST);
    collect();
    const s = new SearchStore(store);
    let t = performance.now();
    const index = await s.index();
    index.search('coffee tomorrow', 50);
    build.push(performance.now() - t);
    t = performance.now();
    await s.close();
    write.push(performance.now() - t);
    if (index.size !== LARGE) throw new Error(`${index.size} indexed`);
  }
  const parts = [...meta.keys()].filter((k) => k.startsWith('search|')).length;
  const first: number[] = [];
  const later: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    // A session starts on a heap without the last run's index; collecting that is not its cost.
    collect();
    const s = new SearchStore(store);
    let t = performance.now();
    const hits = await s.search('coffee tomorrow', 50);
    first.push(performance.now() - t);
    if (hits.length !== 50) throw new Error(`${hits.length} hits`);
    for (const q of ['deadline', 'weekend call #99', 'nothing matches this', 'lunch project late']) {
      t = performance.now();
      await s.search(q, 50);
      later.push(performance.now() - t);
    }
    await s.close();
  }
  // The app stopped between a change of the busiest chat and the write of its parts: that chat is
  // made again from its records at the first search.
  const busiest = chats.filter((c) => c === 'room:r0').length;
  const afterStop: number[] = [];
  for (let run = 0; run < BUILD_RUNS; run++) {
    const manifest = (await store.getMeta(K_SEARCH_MANIFEST)) as { chats: [string, number, number][] };
    for (const c of manifest.chats) if (c[0] === 'room:r0') c[2] = 1;
    await store.putMeta(K_SEARCH_MANIFEST, manifest);
    collect();
    const s = new SearchStore(store);
    const t = performance.now();
    await s.search('coffee tomorrow', 50);
    afterStop.push(performance.now() - t);
    await s.close();
  }
  return { build, write, first, later, parts, busiest, afterStop };
}

function parts(argv: string[]): Set<(typeof PARTS)[number]> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(HELP);
    process.exit(0);
  }
  const at = argv.indexOf('--only');
  const only = at >= 0 ? (argv[at + 1] ?? '').split(',') : [...PARTS];
  const bad = only.filter((p) => !(PARTS as readonly string[]).includes(p));
  if (bad.length > 0 || argv.some((a, i) => a.startsWith('-') && a !== '--only' && i !== at + 1)) {
    console.error(`unknown part or option: ${bad.join(', ') || argv.join(' ')}\n\n${HELP}`);
    process.exit(2);
  }
  const set = new Set(only as (typeof PARTS)[number][]);
  if (process.env.BENCH_PAGE === '0') ['page', 'large'].forEach((p) => set.delete(p as 'page'));
  return set;
}

const row = (name: string, xs: number[], target: string, digits = 1) => {
  const s = stats(xs);
  return `| ${name} | ${s.min.toFixed(digits)} | ${s.median.toFixed(digits)} | ${s.max.toFixed(digits)} | ${target} |`;
};

async function nodeFigures(): Promise<void> {
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

  const large = await largeHistory(key, t0);

  console.log(`Client figures, ${N} records in one chat, ${RUNS} runs, Node ${process.version}\n`);
  console.log('| Figure | min ms | median ms | max ms | target |');
  console.log('|---|---|---|---|---|');
  console.log(row(`open a chat: newest ${PAGE} of ${N} records opened`, openChat, '< 200 ms'));
  console.log(row(`open a chat with ${UNREAD} unread: the records after the read marker, and 20 above`, openUnread, '≤ 200 ms'));
  console.log(row(`first search: all ${N} records opened and indexed`, firstSearch, 'once per session'));
  console.log(row(`one search over ${N} records`, search, '< 100 ms'));
  console.log(row(`${EXPIRING} messages expiring at once: expireDue() and the search index`, expiring, 'no task > 100 ms'));
  const of = `${LARGE} records in ${CHATS} chats`;
  console.log(row(`first search of ${of}: the stored index opened (${large.parts} parts)`, large.first, '≤ 300 ms'));
  console.log(row(`a later search over ${of}`, large.later, '≤ 50 ms'));
  console.log(row(`the index of ${of} built from every record (none stored)`, large.build, `once (${BUILD_RUNS} runs)`));
  console.log(row(`writing that index to the store (${large.parts} parts)`, large.write, `once (${BUILD_RUNS} runs)`));
  console.log(
    row(`first search after a stop left the busiest chat dirty (its ${large.busiest} records opened)`, large.afterStop, `(${BUILD_RUNS} runs)`),
  );
}

async function page(): Promise<void> {
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

async function large(): Promise<void> {
  const l = await largeFigures({
    records: LARGE,
    chats: CHATS,
    runs: LARGE_RUNS,
    ...(process.env.BENCH_PAGE_PROFILE ? { profileDir: process.env.BENCH_PAGE_PROFILE } : {}),
  });
  for (const line of largeTable(l, row)) console.log(line);
}

async function main(): Promise<void> {
  const run = parts(process.argv.slice(2));
  if (run.has('node')) await nodeFigures();
  if (!run.has('page') && !run.has('large')) return;
  const missing = pageMissing();
  if (missing) {
    console.log(`\nThe page figures are left out: ${missing}.`);
    return;
  }
  if (run.has('page')) await page();
  if (run.has('large')) await large();
}

await main();
