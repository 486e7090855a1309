/**
 * Devices in Debian's Chromium (launched by @svc/testkit/browser). One browser per test file; each
 * browser context is one device of one person (its own cookies, localStorage and IndexedDB). Every
 * page of a device reports console errors, uncaught exceptions and CSP violations, which the tests
 * assert away.
 */
import type { Browser, BrowserContext, BrowserContextOptions, Page } from 'playwright-core';

// Each browser test file skips its suite on missingBrowser(), next to the devices it opens.
export { missingBrowser } from '@svc/testkit/browser';

/**
 * Chromium logs every non-2xx response as "Failed to load resource"; those are reported from the
 * response itself instead, with method, path and error body, so a failure says what failed.
 */
const HTTP_STATUS_LOG = /^Failed to load resource: the server responded with a status of/;

/** A signed-out client is told 401 by design (the session probe at start, revoked sessions). */
const expectedStatus = (status: number) => status < 400 || status === 401;

export interface Device {
  name: string;
  context: BrowserContext;
  page: Page;
  /** The device id the app uses, seen in its event-stream requests (newest last). */
  deviceIds: string[];
  /** Opens a fresh page in the same context (same storage), as when the user comes back. */
  reopen(): Promise<Page>;
  /** Errors collected since the last call, emptied by this call. */
  takeErrors(): string[];
  /** Drops the collected errors that match (a race a test knows to be inherent); returns how many. */
  forgiveErrors(match: RegExp): number;
  close(): Promise<void>;
}

function watch(page: Page, device: { name: string; errors: string[]; deviceIds: string[] }): void {
  const note = (what: string) => device.errors.push(`[${device.name}] ${what}`);
  page.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    const text = msg.text();
    if (HTTP_STATUS_LOG.test(text)) return;
    const where = msg.location().url;
    note(`console.error: ${text}${where ? ` (${where})` : ''}`);
  });
  // A native confirm() before a destructive action is answered as the person would: yes.
  page.on('dialog', (d) => void d.accept().catch(() => undefined));
  page.on('pageerror', (err) => note(`uncaught: ${err.stack ?? err.message}`));
  page.on('response', (res) => {
    if (expectedStatus(res.status())) return;
    const label = `HTTP ${res.status()} ${res.request().method()} ${new URL(res.url()).pathname}`;
    const at = device.errors.push(`[${device.name}] ${label}`) - 1;
    // The error body names the code and field; add it if the entry is still waiting to be read.
    void res.text().then(
      (body) => {
        if (device.errors[at] === `[${device.name}] ${label}`) device.errors[at] += ` ${body.slice(0, 300)}`;
      },
      () => undefined,
    );
  });
  page.on('request', (req) => {
    const url = new URL(req.url());
    if (url.pathname === '/api/events') {
      const id = url.searchParams.get('device');
      if (id && device.deviceIds.at(-1) !== id) device.deviceIds.push(id);
    }
  });
}

/** The page's own report of CSP violations, on top of the console message Chromium writes. */
const CSP_PROBE = () => {
  document.addEventListener('securitypolicyviolation', (e) => {
    console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI || '(inline)'} at ${e.sourceFile}:${e.lineNumber}`);
  });
};

export interface DeviceOptions extends BrowserContextOptions {
  /**
   * Give new accounts the app's real KDF parameters (m=65536 KiB, t=3), and expect them of accounts
   * this device never saw, as for a real user. By default a device sets the app's test switch
   * (src/app/kdf/new-account-kdf.ts) to the weakest parameters the bounds allow, so the scenarios that are
   * not about the key derivation do not wait for Argon2id; the files about it pass `realKdf`.
   */
  realKdf?: boolean;
}

/** The init script of the test switch: it runs in every page of the device before the app's code. */
const TEST_KDF_MIN = () => {
  (window as { __svcTestKdf?: string }).__svcTestKdf = 'min';
};

export async function openDevice(browser: Browser, name: string, origin: string, options: DeviceOptions = {}): Promise<Device> {
  const { realKdf, ...contextOptions } = options;
  const context = await browser.newContext({ baseURL: origin, ...contextOptions });
  context.setDefaultTimeout(15_000);
  await context.addInitScript(CSP_PROBE);
  if (!realKdf) await context.addInitScript(TEST_KDF_MIN);
  const state = { name, errors: [] as string[], deviceIds: [] as string[] };
  context.on('page', (p) => watch(p, state));
  const device: Device = {
    name,
    context,
    page: await context.newPage(),
    deviceIds: state.deviceIds,
    async reopen() {
      device.page = await context.newPage();
      await device.page.goto('/');
      return device.page;
    },
    takeErrors() {
      return state.errors.splice(0);
    },
    forgiveErrors(match) {
      const kept = state.errors.filter((e) => !match.test(e));
      const dropped = state.errors.length - kept.length;
      state.errors.splice(0, state.errors.length, ...kept);
      return dropped;
    },
    async close() {
      await context.close();
    },
  };
  return device;
}
