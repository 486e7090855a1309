/**
 * What both page parts of `npm run bench:client` share: the service (SQLite in a temporary
 * directory) and Chromium, the probes every page runs before the app, waiting for the page to go
 * quiet, the page's CPU profile, and the sign-in through the app's own form.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core';
import { ApiClient, cookieFetch, KDF_MIN, Messenger } from '@svc/sdk';
import { CHROMIUM, launchBrowser } from '@svc/testkit/browser';
import { REPO_ROOT, SERVICE_MAIN, startChildOnFreePort, stopAll } from '@svc/testkit/child';

export const PASSWORD_WORDS = () => `bench ${randomBytes(9).toString('base64url')} ${randomBytes(9).toString('base64url')}`;
const APP_INDEX = join(REPO_ROOT, 'packages/web/dist/app/index.html');

/** Why the page part cannot run here, or undefined. */
export function pageMissing(): string | undefined {
  if (!existsSync(CHROMIUM) && !process.env.CHROMIUM) return `${CHROMIUM} is not installed`;
  if (!existsSync(SERVICE_MAIN) || !existsSync(APP_INDEX)) return 'the service or the web app is not built (npm run build)';
  return undefined;
}

export interface Probe {
  __svcTestKdf?: string;
  __idb: { last: number; count: number; firstAfter: number | null; armedAt: number | null };
  __longTasks: { start: number; duration: number }[];
}

/**
 * Runs in every page before the app: the browser tests' switch to the weakest KDF parameters
 * (docs/WEB.md; the bench is not about the key derivation), the long-task observer, and a note
 * of each IndexedDB transaction's start (to see the page go quiet, and the expiry begin).
 */
export const PROBES = () => {
  const w = window as unknown as Probe;
  w.__svcTestKdf = 'min';
  w.__idb = { last: performance.now(), count: 0, firstAfter: null, armedAt: null };
  const transaction = IDBDatabase.prototype.transaction;
  IDBDatabase.prototype.transaction = function (this: IDBDatabase, ...args: Parameters<typeof transaction>) {
    const now = performance.now();
    w.__idb.last = now;
    w.__idb.count++;
    if (w.__idb.armedAt !== null && w.__idb.firstAfter === null) w.__idb.firstAfter = now;
    return transaction.apply(this, args);
  };
  w.__longTasks = [];
  try {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) w.__longTasks.push({ start: e.startTime, duration: e.duration });
    }).observe({ type: 'longtask', buffered: true });
  } catch {
    // no long-task timing in this browser: the figure says so (see longTasksSupported)
  }
};

/** Waits until no IndexedDB transaction started for `ms` (the app finished what it was doing). */
export async function quiet(page: Page, ms = 1_000, patience = 120_000): Promise<void> {
  const end = Date.now() + patience;
  for (;;) {
    const idle = await page.evaluate(() => performance.now() - (window as unknown as Probe).__idb.last);
    if (idle >= ms) return;
    if (Date.now() > end) throw new Error(`the page did not go quiet in ${patience / 1000} s`);
    await page.waitForTimeout(Math.max(50, ms - idle));
  }
}

export const longestSince = (page: Page, from: number, to = Infinity) =>
  page.evaluate(
    ({ from, to }) =>
      (window as unknown as Probe).__longTasks.filter((t) => t.start >= from && t.start < to).reduce((a, t) => Math.max(a, t.duration), 0),
    { from, to },
  );

/** Starts the page's CPU profiler when a directory is given; the returned function writes the profile. */
export async function profiler(page: Page, dir: string | undefined, name: string): Promise<() => Promise<void>> {
  if (!dir) return async () => undefined;
  const cdp: CDPSession = await page.context().newCDPSession(page);
  await cdp.send('Profiler.enable');
  await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
  await cdp.send('Profiler.start');
  return async () => {
    const { profile } = await cdp.send('Profiler.stop');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `${name}.cpuprofile`), JSON.stringify(profile));
    await cdp.detach();
  };
}

/** Messenger in Node over the service, with the KDF the accounts are made with. */
export function messenger(origin: string): Messenger {
  return new Messenger({ api: new ApiClient({ baseUrl: origin, origin, fetch: cookieFetch() }), kdfFloor: KDF_MIN });
}

export interface PageRig {
  origin: string;
  browser: Browser;
  /** What the pages reported: uncaught errors and console errors. */
  errors: string[];
  /** A browser context over the service, the probes installed, its pages' errors noted. */
  context(): Promise<BrowserContext>;
}

/** Runs `work` with the service and Chromium started; both stop after it. */
export async function withPage<T>(work: (rig: PageRig) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-client-'));
  let browser: Browser | null = null;
  try {
    const child = await startChildOnFreePort((port) => ({
      name: 'service',
      args: [SERVICE_MAIN],
      env: {
        PORT: String(port),
        HOST: '127.0.0.1',
        ORIGIN: `http://127.0.0.1:${port}`,
        DATABASE_URL: `sqlite:${join(dir, 'svc.db')}`,
        LIMIT_MESSAGES_PER_MIN: '100000',
        LIMIT_WRITES_PER_MIN: '100000',
        LIMIT_REGISTER_PER_HOUR: '100000',
        LOG_LEVEL: 'warn',
      },
      log: false,
    }));
    const origin = child.url;
    browser = await launchBrowser(process.env.CHROMIUM);
    const errors: string[] = [];
    const b = browser;
    const context = async () => {
      const c = await b.newContext({ baseURL: origin, viewport: { width: 1280, height: 800 } });
      c.setDefaultTimeout(60_000);
      await c.addInitScript(PROBES);
      c.on('page', (page) => {
        page.on('pageerror', (e) => errors.push(`uncaught: ${e.message}`));
        page.on('console', (m) => {
          if (m.type() === 'error' && !/^Failed to load resource/.test(m.text())) errors.push(`console.error: ${m.text()}`);
        });
      });
      return c;
    };
    const out = await work({ origin, browser, errors, context });
    if (errors.length > 0) throw new Error(`the page reported errors:\n${errors.join('\n')}`);
    return out;
  } finally {
    await browser?.close();
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Signs in through the app's form: it makes the account's database and keeps the session for reloads. */
export async function signIn(page: Page, nick: string, password: string): Promise<void> {
  await page.goto('/');
  await page.getByRole('textbox', { name: 'Nick', exact: true }).fill(nick);
  await page.getByLabel('Password', { exact: true }).filter({ visible: true }).fill(password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('navigation', { name: 'Chats' }).waitFor({ timeout: 120_000 });
  await quiet(page);
}

/** A chat's entry in the chat list, by the peer's nick or the room's name. */
export function chatEntry(page: Page, title: string) {
  return page.getByRole('navigation', { name: 'Chats' }).getByRole('link', { name: new RegExp(`^\\s*${title}(?!\\w)`) });
}
