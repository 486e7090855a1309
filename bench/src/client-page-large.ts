/**
 * The large-history part of `npm run bench:client`: the built web client in Chromium over the real
 * service, its IndexedDB holding 100,000 messages in 200 DMs (about 500 each, over a year) and the
 * search index the app keeps of them, as a returning person on that device finds it (the session
 * resumed from what the browser saved: no password). Each run opens the app in two new tabs, one
 * after the other:
 *
 * - app start, in both: from the navigation's start to the frame in which the chat list holds its
 *   200 entries (the page's own clock: performance.now() counts from the navigation's start);
 * - in the first, a search typed as soon as the chat list shows: from the input event (its
 *   timeStamp) in "Search messages" to the frame in which the results are shown, the stored index
 *   read meanwhile;
 * - in the second, once the app has settled (no IndexedDB transaction for a second): opening a
 *   chat, from the click on its entry to the frame in which its newest message is inside the log's
 *   visible box; the tab's first search and later ones, as above;
 * - memory after start, after the opening and after the searches: the page's JavaScript heap after
 *   a full collection (CDP Performance.getMetrics), and the resident and private memory of the
 *   renderer process (the largest one; the tab is the only one open).
 *
 * The history is written as in client-page.ts (client-page-history.ts makes it), once; every run
 * reads the same profile.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import type { BrowserContext, CDPSession, Page } from 'playwright-core';
import { KDF_MIN } from '@svc/sdk';
// The app's own code, compiled for Node by packages/web/unit (the web unit tests' build).
import { accountDbName } from '../../packages/web/dist/node/src/app/idb.js';
import { registerBody } from './fixtures.js';
import { rssBytes } from './procfs.js';
import { chatEntry, messenger, PASSWORD_WORDS, profiler, quiet, signIn, withPage } from './client-page-common.js';
import { historySeed } from './client-page-history.js';
import { writeSeed } from './client-page-seed.js';

export interface LargeOptions {
  records: number;
  chats: number;
  runs: number;
  /** A directory for the page's CPU profiles of the first run's start, opening and first searches. */
  profileDir?: string;
}

export interface Memory {
  /** The page's JavaScript heap in use after a full collection, bytes. */
  heap: number;
  /** The renderer's resident set and its private (not shared) part, bytes. */
  rss: number;
  private: number;
}

export interface LargeFigures {
  /** Navigation start → the chat list's entries all drawn, ms, two per run. */
  start: number[];
  /** Click → the chat's newest message in view, ms, per run. */
  open: number[];
  /** The first search of a tab typed as soon as the chat list shows, input → results drawn, ms. */
  searchAtStart: number[];
  /** The first search of a tab after the app settled, and every later one, input → results drawn, ms. */
  firstSearch: number[];
  search: number[];
  memory: { start: Memory; open: Memory; search: Memory }[];
  /** A tab of the service's /healthz (no app), for comparison. */
  baseline: Memory;
  entries: number;
  records: number;
  seedMs: { seal: number; write: number };
  parts: number;
  chromium: string;
  load: string;
}

/** The first finds 50 (the most shown), the others 50, 50, 50, 11 (#4242 and #42420 to #42429) and none. */
const QUERIES = ['coffee tomorrow', 'deadline', 'train plan', 'meet project', '#4242', 'nothing matches this'];

type Large = Window & {
  __listed?: Promise<{ all: number; n: number }>;
  __landed?: Promise<{ at: number; click: number }>;
  __found?: Promise<{ at: number; input: number; hits: number }>;
};

/** In every page before the app: the frame in which the chat list shows `want` entries. */
const LISTED = (want: number) => {
  const w = window as Large;
  w.__listed = new Promise((resolve) => {
    const frame = () => {
      const n = document.querySelectorAll('nav[aria-label="Chats"] a[data-chat]').length;
      if (n >= want) return resolve({ all: performance.now(), n });
      requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
  });
};

/** Installs the watch of the opening: the next click's time, and the first frame with record `id` in the log's view. */
function watchOpening(page: Page, id: string): Promise<void> {
  return page.evaluate((id) => {
    let click: number | undefined;
    document.addEventListener('click', (e) => (click ??= e.timeStamp), { capture: true, once: true });
    (window as Large).__landed = new Promise((resolve) => {
      const frame = () => {
        const row = document.querySelector(`[role="log"] li[data-id="${id}"]`);
        const log = row?.closest('[role="log"]');
        if (click !== undefined && row && log) {
          const r = row.getBoundingClientRect();
          const l = log.getBoundingClientRect();
          if (r.height > 0 && r.top >= l.top - 1 && r.bottom <= l.bottom + 1) return resolve({ at: performance.now(), click });
        }
        requestAnimationFrame(frame);
      };
      requestAnimationFrame(frame);
    });
  }, id);
}

/** Types `query` into "Search messages" (emptied first); resolves the time from its input event to the results drawn. */
async function search(page: Page, query: string): Promise<{ ms: number; hits: number }> {
  const box = page.getByRole('searchbox', { name: 'Search messages' });
  await box.fill('');
  await page.waitForFunction(() => document.getElementById('search-results')?.hidden === true);
  await page.evaluate(() => {
    let input: number | undefined;
    const box = document.getElementById('search-messages')!;
    box.addEventListener('input', (e) => (input ??= e.timeStamp), { capture: true, once: true });
    (window as Large).__found = new Promise((resolve) => {
      const frame = () => {
        const results = document.getElementById('search-results')!;
        if (input !== undefined && !results.hidden) return resolve({ at: performance.now(), input, hits: results.children.length });
        requestAnimationFrame(frame);
      };
      requestAnimationFrame(frame);
    });
  });
  await box.fill(query);
  const found = await page.evaluate(() => (window as Large).__found!);
  return { ms: found.at - found.input, hits: found.hits };
}

/** The page's heap after a full collection, and the renderer's memory (the largest renderer: the only tab). */
async function memory(page: Page, browserCdp: CDPSession): Promise<Memory> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('HeapProfiler.collectGarbage');
  await cdp.send('Performance.enable');
  const { metrics } = await cdp.send('Performance.getMetrics');
  await cdp.detach();
  const heap = metrics.find((m) => m.name === 'JSHeapUsedSize')?.value ?? NaN;
  const { processInfo } = await browserCdp.send('SystemInfo.getProcessInfo');
  let best = { rss: 0, private: 0 };
  for (const p of processInfo.filter((p) => p.type === 'renderer')) {
    try {
      const rss = rssBytes(p.id);
      const smaps = readFileSync(`/proc/${p.id}/smaps_rollup`, 'utf8');
      const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB$`, 'm').exec(smaps)?.[1] ?? 0) * 1024;
      if (rss > best.rss) best = { rss, private: kb('Private_Clean') + kb('Private_Dirty') };
    } catch {
      // a renderer that ended meanwhile
    }
  }
  return { heap, ...best };
}

/** Opens the app in a new tab (the previous one closed) and waits for its chat list; the profile covers the start when asked. */
async function startApp(context: BrowserContext, previous: Page | null, profileDir: string | undefined) {
  await previous?.close();
  const page = await context.newPage();
  const stop = await profiler(page, profileDir, 'large-start');
  await page.goto('/');
  const listed = await page.evaluate(() => (window as Large).__listed!);
  await stop();
  return { page, listed };
}

export async function largeFigures(o: LargeOptions, log: (line: string) => void = console.error): Promise<LargeFigures> {
  return withPage(async ({ origin, browser, context: newContext }) => {
    const tag = randomBytes(3).toString('hex');
    const me = `dana_${tag}`;
    const password = PASSWORD_WORDS();
    const peers = Array.from({ length: o.chats }, (_, i) => `p${String(i).padStart(3, '0')}_${tag}`);
    const t0 = performance.now();
    log(`registering ${o.chats} peers…`);
    // The peers exist and are contacts, so the app finds each DM's peer listed once online. Their
    // accounts are bare registrations (no key derivation): nobody signs in as them.
    for (const nick of peers) {
      const res = await fetch(`${origin}/api/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin },
        body: JSON.stringify(registerBody(nick)),
      });
      if (res.status !== 201) throw new Error(`registering ${nick}: ${res.status} ${await res.text()}`);
    }
    const dana = messenger(origin);
    await dana.register({ nick: me, password, kdf: KDF_MIN });
    for (const peer of peers) await dana.api.addContact(peer);
    const keys = { history: dana.historyKey, index: dana.indexKey };
    const dbName = await accountDbName(dana.indexKey);

    log(
      `peers registered in ${((performance.now() - t0) / 1000).toFixed(1)} s; making ${o.records} sealed records in ${o.chats} chats, and their search index…`,
    );
    let t = performance.now();
    const history = await historySeed(keys, me, peers, o.records, log);
    const seal = performance.now() - t;

    const context = await newContext();
    await context.addInitScript(LISTED, o.chats);
    const browserCdp = await browser.newBrowserCDPSession();
    let page = await context.newPage();
    await page.goto('/healthz');
    const baseline = await memory(page, browserCdp);
    await signIn(page, me, password);
    await page.goto('/healthz');
    t = performance.now();
    await writeSeed(page, dbName, history.seed);
    const write = performance.now() - t;
    log(`history made in ${(seal / 1000).toFixed(1)} s, written to IndexedDB in ${(write / 1000).toFixed(1)} s (${history.parts} search parts)`);
    // A first start after the history arrived, not timed: the service worker and the stored chat list settle.
    await page.goto('/');
    await page.evaluate(() => (window as Large).__listed!);
    await quiet(page, 2_000);

    const figures: LargeFigures = {
      start: [],
      open: [],
      searchAtStart: [],
      firstSearch: [],
      search: [],
      memory: [],
      baseline,
      entries: 0,
      records: o.records,
      seedMs: { seal, write },
      parts: history.parts,
      chromium: browser.version(),
      load: '',
    };
    const loadStart = loadavg()[0]!.toFixed(2);
    for (let run = 0; run < o.runs; run++) {
      const profileDir = run === 0 ? o.profileDir : undefined;
      // A tab in which the first query is typed as soon as the chat list shows: the index is read then.
      const early = await startApp(context, page, undefined);
      page = early.page;
      const stopEarly = await profiler(page, profileDir, 'large-search-at-start');
      const atOnce = await search(page, QUERIES[0]!);
      await stopEarly();
      figures.searchAtStart.push(atOnce.ms);
      await quiet(page);
      // Then one in which the app settles first (reading the index in the background), as the others are measured.
      const started = await startApp(context, page, profileDir);
      page = started.page;
      figures.start.push(early.listed.all, started.listed.all);
      figures.entries = started.listed.n;
      await quiet(page);
      const atStart = await memory(page, browserCdp);

      const peer = history.order[1 + run]!;
      await watchOpening(page, history.newest.get(peer)!);
      const stopOpen = await profiler(page, profileDir, 'large-open');
      await chatEntry(page, peer).click();
      const landed = await page.evaluate(() => (window as Large).__landed!);
      await stopOpen();
      figures.open.push(landed.at - landed.click);
      await quiet(page);
      const atOpen = await memory(page, browserCdp);

      const stopSearch = await profiler(page, profileDir, 'large-search');
      const first = await search(page, QUERIES[0]!);
      await stopSearch();
      if (first.hits === 0) throw new Error(`"${QUERIES[0]}" found nothing`);
      figures.firstSearch.push(first.ms);
      const later: string[] = [];
      for (const q of QUERIES.slice(1)) {
        const r = await search(page, q);
        figures.search.push(r.ms);
        later.push(`${r.ms.toFixed(1)} (${r.hits})`);
      }
      await quiet(page);
      const atSearch = await memory(page, browserCdp);
      figures.memory.push({ start: atStart, open: atOpen, search: atSearch });
      const mb = (m: Memory) =>
        `heap ${(m.heap / 2 ** 20).toFixed(1)} MB, renderer ${(m.rss / 2 ** 20).toFixed(0)} MB (${(m.private / 2 ** 20).toFixed(0)} private)`;
      log(
        `run ${run + 1}: start ${early.listed.all.toFixed(0)} and ${started.listed.all.toFixed(0)} ms, search at start ${atOnce.ms.toFixed(1)} ms, open ${(landed.at - landed.click).toFixed(1)} ms, ` +
          `first search ${first.ms.toFixed(1)} ms (${first.hits} hits), later ${later.join(', ')}; ${mb(atSearch)}`,
      );
    }
    figures.load = `${loadStart} → ${loadavg()[0]!.toFixed(2)}`;
    await browserCdp.detach();
    return figures;
  });
}

/** The figures as the markdown table `npm run bench:client` prints; `row` gives min, median and max of a list. */
export function largeTable(l: LargeFigures, row: (name: string, xs: number[], target: string) => string): string[] {
  const mb = (pick: (m: LargeFigures['memory'][number]) => number) => l.memory.map((m) => pick(m) / 2 ** 20);
  const b = l.baseline;
  return [
    `\nIn the web client over ${l.records} messages in ${l.entries} chats: Chromium ${l.chromium}, ${l.open.length} runs, load average ${l.load}; ` +
      `history sealed in ${(l.seedMs.seal / 1000).toFixed(1)} s, written in ${(l.seedMs.write / 1000).toFixed(1)} s, ${l.parts} search parts\n`,
    '| Figure | min | median | max | target |',
    '|---|---|---|---|---|',
    row(`app start (session resumed) → chat list with ${l.entries} entries, ms (two tabs a run)`, l.start, '≤ 500 ms'),
    row(`open a chat of ~${Math.round(l.records / l.entries)}: click → its newest message in view, ms`, l.open, '≤ 200 ms'),
    row('first search of a tab, typed as the chat list shows: input → results drawn, ms', l.searchAtStart, '≤ 300 ms'),
    row('first search of a tab after the app settled, ms', l.firstSearch, '≤ 300 ms'),
    row('a later search, ms', l.search, '≤ 50 ms'),
    row(
      'JS heap after start, MB',
      mb((m) => m.start.heap),
      '—',
    ),
    row(
      'JS heap after opening a chat, MB',
      mb((m) => m.open.heap),
      '—',
    ),
    row(
      'JS heap after searching, MB',
      mb((m) => m.search.heap),
      '—',
    ),
    row(
      'renderer private memory after searching, MB',
      mb((m) => m.search.private),
      '≤ 150 MB',
    ),
    row(
      'renderer resident memory after searching, MB',
      mb((m) => m.search.rss),
      '—',
    ),
    `\nA tab of the service's /healthz (no app) for comparison: heap ${(b.heap / 2 ** 20).toFixed(1)} MB, ` +
      `renderer private ${(b.private / 2 ** 20).toFixed(0)} MB, resident ${(b.rss / 2 ** 20).toFixed(0)} MB.`,
  ];
}
