/**
 * `npm run bench:signin -- <before> <after> [--runs N]`: the sign-in time a person feels in
 * Chromium, for two builds side by side (docs/BENCHMARKS.md).
 *
 * Each of <before> and <after> is either a built checkout of this repository (its service is
 * started on a fresh SQLite file and a free port) or the origin of a running service with open
 * registration. One account is created per build through the sign-up form, at the web app's
 * default KDF parameters; then each run signs in from a fresh browser context (a new device, no
 * storage) and times, in Node, from the click on "Sign in" until the chat list shows. The runs
 * alternate between the builds, with the first one swapped each round, so machine load falls on
 * both alike. Inside the page, the Argon2id alone is timed from the creation of the key-derivation
 * worker (named "argon2id") to the arrival of its hash on the page.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser } from '@svc/testkit/browser';
import { startChildOnFreePort, stopAll, type ChildService } from '@svc/testkit/child';

const PATIENCE = 120_000;
const USAGE = 'npm run bench:signin -- <before: checkout dir or origin> <after: checkout dir or origin> [--runs N]';

interface Target {
  label: string;
  origin: string;
  child: ChildService | null;
  dir: string | null;
  nick: string;
  password: string;
  felt: number[];
  derivation: number[];
}

/** Wraps Worker so that each Argon2id worker's life, from creation to its hash, lands in a list. */
const TIME_DERIVATION = () => {
  const times: number[] = [];
  (window as unknown as { __argon2Ms: number[] }).__argon2Ms = times;
  const Base = window.Worker;
  window.Worker = class extends Base {
    constructor(url: string | URL, options?: WorkerOptions) {
      super(url, options);
      if (options?.name !== 'argon2id') return;
      const start = performance.now();
      this.addEventListener('message', (e: MessageEvent<{ hash?: unknown; error?: unknown }>) => {
        if (e.data.hash !== undefined || e.data.error !== undefined) times.push(performance.now() - start);
      });
    }
  };
};

async function startTarget(label: string, where: string): Promise<Target> {
  const nick = `signin_${randomBytes(3).toString('hex')}`;
  const password = `bench ${randomBytes(9).toString('base64url')} ${randomBytes(9).toString('base64url')}`;
  const base = { label, nick, password, felt: [], derivation: [] };
  if (/^https?:\/\//.test(where)) return { ...base, origin: new URL(where).origin, child: null, dir: null };
  const main = resolve(where, 'packages/server/dist/src/main.js');
  if (!existsSync(main)) throw new Error(`${label}: ${main} does not exist; build that checkout first (npm run build)`);
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-signin-'));
  const env = {
    HOST: '127.0.0.1',
    DATABASE_URL: `sqlite:${join(dir, 'svc.db')}`,
    LIMIT_LOGIN_PER_10MIN: '100000',
    LIMIT_LOGIN_PER_IP_PER_10MIN: '100000',
    LIMIT_LOGIN_PER_NICK_PER_10MIN: '100000',
    LIMIT_REGISTER_PER_HOUR: '100000',
    LOG_LEVEL: 'warn',
  };
  const child = await startChildOnFreePort((port) => ({
    name: `service (${label})`,
    args: [main],
    env: { ...env, PORT: String(port), ORIGIN: `http://127.0.0.1:${port}` },
    log: false,
    graceMs: 15_000,
  }));
  const origin = child.url;
  return { ...base, origin, child, dir };
}

function field(page: Page, label: string) {
  return page.getByLabel(label, { exact: true }).filter({ visible: true });
}

async function signUp(browser: Browser, t: Target): Promise<void> {
  const context = await browser.newContext({ baseURL: t.origin });
  try {
    const page = await context.newPage();
    await page.goto('/');
    await page.getByRole('textbox', { name: 'Nick', exact: true }).fill(t.nick);
    await field(page, 'Password').fill(t.password);
    await field(page, 'Confirm password').fill(t.password);
    await page.getByRole('button', { name: 'Create account', exact: true }).click();
    await page.getByRole('navigation', { name: 'Chats' }).waitFor({ timeout: PATIENCE });
  } finally {
    await context.close();
  }
}

async function signIn(browser: Browser, t: Target): Promise<void> {
  const context = await browser.newContext({ baseURL: t.origin });
  try {
    await context.addInitScript(TIME_DERIVATION);
    const page = await context.newPage();
    await page.goto('/');
    await page.getByRole('textbox', { name: 'Nick', exact: true }).fill(t.nick);
    await field(page, 'Password').fill(t.password);
    const submit = page.getByRole('button', { name: 'Sign in', exact: true });
    await submit.waitFor();
    const start = performance.now();
    await submit.click();
    await page.getByRole('navigation', { name: 'Chats' }).waitFor({ timeout: PATIENCE });
    t.felt.push(performance.now() - start);
    const derivations = await page.evaluate(() => (window as unknown as { __argon2Ms: number[] }).__argon2Ms);
    if (derivations.length !== 1) throw new Error(`${t.label}: sign-in ran ${derivations.length} key derivations, expected 1`);
    t.derivation.push(derivations[0]!);
  } finally {
    await context.close();
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
const sec = (ms: number) => (ms / 1000).toFixed(2);
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(', ');

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  let runs = 5;
  const places: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--runs') runs = Number(argv[++i]);
    else if (argv[i] === '--help' || argv[i] === '-h') return console.log(USAGE);
    else places.push(argv[i]!);
  }
  if (places.length !== 2 || !Number.isInteger(runs) || runs < 1) throw new Error(`usage: ${USAGE}`);

  const targets: Target[] = [];
  let browser: Browser | null = null;
  try {
    targets.push(await startTarget('before', places[0]!), await startTarget('after', places[1]!));
    // CHROMIUM names another build of Chromium to measure in.
    browser = await launchBrowser(process.env.CHROMIUM);
    const loadStart = load();
    for (const t of targets) await signUp(browser, t);
    for (let r = 0; r < runs; r++) {
      for (const t of r % 2 ? [...targets].reverse() : targets) {
        await signIn(browser, t);
        console.error(`run ${r + 1} ${t.label}: felt ${sec(t.felt.at(-1)!)} s, Argon2id ${sec(t.derivation.at(-1)!)} s`);
      }
    }
    const [b, a] = targets as [Target, Target];
    console.log(
      `Chromium ${browser.version()}, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, load average ${loadStart} at the start, ${load()} at the end\n`,
    );
    console.log('| Sign-in, default KDF (65536, 3, 1) | before: median (runs), s | after: median (runs), s | after ÷ before |');
    console.log('|---|---|---|---:|');
    const row = (name: string, x: number[], y: number[]) =>
      console.log(
        `| ${name} | **${sec(median(x))}** (${x.map(sec).join(', ')}) | **${sec(median(y))}** (${y.map(sec).join(', ')}) | ${(median(y) / median(x)).toFixed(2)} |`,
      );
    row('click on "Sign in" → chat list shown', b.felt, a.felt);
    row('Argon2id in the page (worker created → hash back)', b.derivation, a.derivation);
  } finally {
    await browser?.close();
    await stopAll();
    for (const t of targets) if (t.dir) rmSync(t.dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
