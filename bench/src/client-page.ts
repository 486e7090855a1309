/**
 * The in-page part of `npm run bench:client`: the built web client in Chromium over the real
 * service (SQLite in a temporary directory), as a person meets it.
 *
 * - Opening a chat of 10,000 messages whose newest 2,000 are unread: from the click on its entry
 *   in the chat list to the first animation frame in which the "New messages" separator is inside
 *   the log's visible box (the time is the page's own clock: the click event's timeStamp and the
 *   frame's performance.now()). The page is loaded afresh before each run.
 * - 1,000 unread messages under a 5-minute disappearing timer, seen together on another of the
 *   account's devices some 4 minutes before (so their deadlines are 45 s after they are made, whatever
 *   the opening and the marking read of 1,000 records cost on a loaded machine), opened at once:
 *   their timers run out at the same moment while all 1,000 are on screen. Measured from the first
 *   IndexedDB transaction after the page went quiet (the expiry's first read) to the frame in
 *   which the last of them left the log, and the longest task (PerformanceObserver 'longtask',
 *   buffered) of that span; the longest task while the 1,000 timers counted down is told too.
 *
 * The history is not sent through the service (10,000 sends at the account's rate limit take
 * long): the page's IndexedDB is filled with rows made by the app's own store code
 * (IdbConversationStore, its tags and the chat list's rows, compiled for Node as the web unit tests
 * are) under the account's own keys, which a second sign-in in Node derives as every device does.
 * The rows are written from a same-origin page that does not run the app (/healthz), then the app
 * is loaded and reads them as its own.
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import type { Page } from 'playwright-core';
import { KDF_MIN } from '@svc/sdk';
// The app's own code, compiled for Node by packages/web/unit (the web unit tests' build).
import { accountDbName } from '../../packages/web/dist/node/src/app/idb.js';
import { chatEntry, longestSince, messenger, PASSWORD_WORDS, profiler, quiet, signIn, withPage, type Probe } from './client-page-common.js';
import { chatSeed, writeSeed, type ChatSeed } from './client-page-seed.js';

export { pageMissing } from './client-page-common.js';

export interface PageOptions {
  /** A directory to write the page's CPU profile of the first opening and the first expiry to (.cpuprofile). */
  profileDir?: string;
  records: number;
  unread: number;
  expiring: number;
  runs: number;
  /** Runs of the expiry (each waits out a 30-second timer). */
  expiryRuns: number;
}

export interface PageFigures {
  /** Click → "New messages" in view, ms, per run. */
  open: number[];
  /** The longest task while opening (the log drawn), ms, per run: not a target, told beside it. */
  openLongest: number[];
  /** The longest task of the expiry, ms (0: none over 50 ms), per run. */
  expiryLongest: number[];
  /** The longest task while the 1,000 timers count down on screen (before the expiry), ms, per run. */
  countdownLongest: number[];
  /** From the expiry's first read to the last expired row gone from the log, ms, per run. */
  expiryWall: number[];
  chromium: string;
  load: string;
}

/** The expiring messages' timer (5 minutes, one of the app's choices), and how long after they are made it runs out. */
const TIMER_SECONDS = 300;
const LEAD_MS = 45_000;

/** What this part's pages hold besides the common probes. */
type Watch = Probe & {
  __watch?: Promise<{ at: number; click: number; next: string | null }>;
  __gone?: Promise<number>;
};

/** Installs the watch of the landing: the next click's time, and the first frame with "New messages" in view. */
async function watchLanding(page: Page): Promise<void> {
  await page.evaluate(() => {
    const w = window as unknown as Watch;
    let click: number | undefined;
    document.addEventListener('click', (e) => (click ??= e.timeStamp), { capture: true, once: true });
    w.__watch = new Promise((resolve) => {
      const frame = () => {
        const sep = document.querySelector('[role="log"] [role="separator"][aria-label="New messages"]');
        const log = sep?.closest('[role="log"]');
        if (click !== undefined && sep && log) {
          const s = sep.getBoundingClientRect();
          const l = log.getBoundingClientRect();
          if (s.height > 0 && s.top >= l.top && s.bottom <= l.bottom) {
            const next = sep.closest('li')?.nextElementSibling?.getAttribute('data-id') ?? null;
            return resolve({ at: performance.now(), click, next });
          }
        }
        requestAnimationFrame(frame);
      };
      requestAnimationFrame(frame);
    });
  });
}

/** Loads the app afresh over `seed` and opens `peer`'s chat; returns the landing and the page's clock at the click. */
async function openSeeded(
  page: Page,
  dbName: string,
  s: ChatSeed,
  peer: string,
  beforeClick: () => Promise<void> = async () => undefined,
): Promise<{ ms: number; at: number; click: number }> {
  await page.goto('/healthz');
  await writeSeed(page, dbName, s.seed);
  await page.goto('/');
  await chatEntry(page, peer).waitFor({ timeout: 60_000 });
  await quiet(page);
  await watchLanding(page);
  await beforeClick();
  await chatEntry(page, peer).click();
  const landed = await page.evaluate(() => (window as unknown as Watch).__watch!);
  if (landed.next !== s.firstUnread) throw new Error(`"New messages" sits above ${landed.next}, not above the first unread ${s.firstUnread}`);
  return { ms: landed.at - landed.click, at: landed.at, click: landed.click };
}

export async function pageFigures(o: PageOptions, log: (line: string) => void = console.error): Promise<PageFigures> {
  return withPage(async ({ origin, browser, context }) => {
    const tag = randomBytes(3).toString('hex');
    const [me, bob, carol] = [`alice_${tag}`, `bob_${tag}`, `carol_${tag}`];
    const password = PASSWORD_WORDS();
    // The peers exist, with a device, so the receipts the app sends on reading reach a queue.
    for (const nick of [bob, carol]) {
      const m = messenger(origin);
      await m.register({ nick, password, kdf: KDF_MIN });
      await m.ensureDevice(`bench-${nick}`);
    }
    const alice = messenger(origin);
    await alice.register({ nick: me, password, kdf: KDF_MIN });
    for (const peer of [bob, carol]) await alice.api.addContact(peer);
    const keys = { history: alice.historyKey, index: alice.indexKey };
    const dbName = await accountDbName(alice.indexKey);

    log(`making ${o.records} sealed records for each of two chats…`);
    const opening = await chatSeed(keys, me, bob, o.records, o.unread);

    const page = await (await context()).newPage();
    await signIn(page, me, password);
    const supported = await page.evaluate(() => PerformanceObserver.supportedEntryTypes.includes('longtask'));
    if (!supported) throw new Error('this Chromium reports no long tasks');

    const figures: PageFigures = {
      open: [],
      openLongest: [],
      expiryLongest: [],
      countdownLongest: [],
      expiryWall: [],
      chromium: browser.version(),
      load: '',
    };
    const loadStart = loadavg()[0]!.toFixed(2);
    for (let run = 0; run < o.runs; run++) {
      let stop: () => Promise<void> = async () => undefined;
      const landed = await openSeeded(page, dbName, opening, bob, async () => {
        if (run === 0) stop = await profiler(page, o.profileDir, 'open');
      });
      await stop();
      await quiet(page);
      figures.open.push(landed.ms);
      figures.openLongest.push(await longestSince(page, landed.click, landed.at));
      log(`open ${run + 1}: ${landed.ms.toFixed(1)} ms to "New messages" (longest task ${figures.openLongest.at(-1)!.toFixed(0)} ms)`);
    }

    for (let run = 0; run < o.expiryRuns; run++) {
      const deadline = Date.now() + LEAD_MS;
      const expiring = await chatSeed(keys, me, carol, o.records, o.expiring, { expire: TIMER_SECONDS, seenAt: deadline - TIMER_SECONDS * 1000 });
      const landed = await openSeeded(page, dbName, expiring, carol);
      // Opening marks the 1,000 read (a read and a write each); wait for that to end.
      await quiet(page, 1_500, Math.max(0, deadline - 3_000 - Date.now()));
      const armed = await page.evaluate((ids) => {
        const w = window as unknown as Watch;
        const onScreen = new Set(Array.from(document.querySelectorAll('[role="log"] li[data-id]')).map((li) => li.getAttribute('data-id')));
        const timers = document.querySelectorAll('[role="log"] [role="timer"]').length;
        const missing = ids.filter((id) => !onScreen.has(id)).length;
        w.__idb.armedAt = performance.now();
        w.__idb.firstAfter = null;
        w.__gone = new Promise((resolve, reject) => {
          const patience = setTimeout(() => reject(new Error('the expiring messages were still on screen 2 minutes later')), 120_000);
          const frame = () => {
            const left = ids.some((id) => document.querySelector(`[role="log"] li[data-id="${id}"]`));
            if (!left) {
              clearTimeout(patience);
              return resolve(performance.now());
            }
            requestAnimationFrame(frame);
          };
          requestAnimationFrame(frame);
        });
        return { at: w.__idb.armedAt, now: Date.now(), missing, timers };
      }, expiring.unreadIds);
      if (armed.missing > 0)
        throw new Error(`${armed.missing} of the ${o.expiring} expiring messages were not on screen before their timers ran out`);
      if (armed.now > deadline - 2_000)
        throw new Error(`the page took ${((armed.at - landed.at) / 1000).toFixed(1)} s to settle after opening, too close to the deadline`);
      const stop = await profiler(page, run === 0 ? o.profileDir : undefined, 'expiry');
      const gone = await page.evaluate(() => (window as unknown as Watch).__gone!);
      await stop();
      const start = await page.evaluate(() => (window as unknown as Probe).__idb.firstAfter);
      if (start === null) throw new Error('the expiry touched no IndexedDB');
      await quiet(page);
      figures.expiryWall.push(gone - start);
      figures.expiryLongest.push(await longestSince(page, start));
      figures.countdownLongest.push(await longestSince(page, armed.at, start));
      const tasks = await page.evaluate(
        (from) =>
          (window as unknown as Probe).__longTasks
            .filter((t) => t.start >= from)
            .map((t) => `${((t.start - from) / 1000).toFixed(1)} s: ${t.duration.toFixed(0)} ms`),
        armed.at,
      );
      log(
        `expiry ${run + 1}: ${armed.timers} timers on screen, the expiry began ${((start - armed.at) / 1000).toFixed(1)} s after the page settled; all gone ${(gone - start).toFixed(0)} ms after its first read; long tasks since the page settled: ${tasks.join(', ') || 'none'}`,
      );
    }
    figures.load = `${loadStart} → ${loadavg()[0]!.toFixed(2)}`;
    return figures;
  });
}
