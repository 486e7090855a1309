/**
 * The service worker serves this build's files from a cache that any script of the origin can
 * write. It checks each cached copy against the SHA-256 list built into sw.js, so a script that
 * rewrites a cached asset (an injected script making itself part of the app for good) is not run
 * on the next load: the copy is dropped and the build's own file fetched again.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { missingBrowser, type Device } from './harness/browser.js';
import { nick, openScene, type Scene } from './harness/scene.js';
import { chatList, signUp } from './harness/ui.js';

/** The URL of the app's main script, as index.html names it. */
function mainScript(page: Page): Promise<string> {
  return page.evaluate(() =>
    Array.from(document.scripts)
      .map((s) => s.src)
      .find((src) => new URL(src).pathname.startsWith('/assets/index-'))!,
  );
}

/** Replaces the shell cache's copy of `url` with `prefix` + the cached text, as a page script can; returns the text it had. */
function tamper(page: Page, url: string, prefix: string): Promise<string> {
  return page.evaluate(
    async ({ url, prefix }) => {
      const name = (await caches.keys()).find((n) => n.startsWith('svc-shell-'));
      if (!name) throw new Error('no shell cache');
      const cache = await caches.open(name);
      const genuine = await (await cache.match(url))!.text();
      await cache.put(url, new Response(prefix + genuine, { headers: { 'content-type': 'text/javascript' } }));
      return genuine;
    },
    { url, prefix },
  );
}

/**
 * Reloads with Chromium's in-memory resource cache off: it would otherwise hand the page a script
 * it loaded a moment ago without asking the worker. Then checks that the worker answered for `url`.
 */
async function reload(page: Page, url: string): Promise<void> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
  await page.reload();
  await chatList(page).waitFor();
  const viaWorker = await page.evaluate(
    (url) => performance.getEntriesByName(url).some((e) => (e as PerformanceResourceTiming).workerStart > 0),
    url,
  );
  assert.ok(viaWorker, `the service worker answered for ${url}`);
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: false });
  await cdp.detach();
}

function cachedText(page: Page, url: string): Promise<string | null> {
  return page.evaluate(async (url) => {
    const name = (await caches.keys()).find((n) => n.startsWith('svc-shell-'));
    const hit = name ? await (await caches.open(name)).match(url) : undefined;
    return hit ? hit.text() : null;
  }, url);
}

describe('web client: the service worker serves only the build’s own files', { skip: missingBrowser() }, () => {
  let scene: Scene;
  let alice: Device;

  before(async () => {
    scene = await openScene();
    alice = await scene.device('alice');
  });
  after(async () => {
    await scene?.close();
  });

  test('a page script writes a tampered asset into the cache: the next load does not run it, and the cache holds the build’s file again', async () => {
    await scene.step(async () => {
      await signUp(alice.page, nick('alice'), 'alice cache integrity');
      await alice.page.waitForFunction(() => navigator.serviceWorker.controller !== null);
      const url = await mainScript(alice.page);
      const genuine = await tamper(alice.page, url, 'window.__tampered = true;\n');
      assert.ok(genuine.length > 1000, 'the cached main script was read');

      await reload(alice.page, url);
      assert.equal(await alice.page.evaluate(() => (window as { __tampered?: boolean }).__tampered), undefined, 'the tampered copy did not run');
      assert.equal(await mainScript(alice.page), url, 'the same build');
      assert.equal(await cachedText(alice.page, url), genuine, 'the cache holds the build’s file again');
    })();
  });

  test('a tampered copy with the right bytes but a response made by a page script is not served either', async () => {
    await scene.step(async () => {
      const url = await mainScript(alice.page);
      // Same body, but a Response the script built: its headers are the script's, not the service's.
      await tamper(alice.page, url, '');
      await reload(alice.page, url);
      const type = await alice.page.evaluate(async (url) => {
        const name = (await caches.keys()).find((n) => n.startsWith('svc-shell-'));
        return (await (await caches.open(name!)).match(url))?.type ?? null;
      }, url);
      assert.equal(type, 'basic', `replaced by the service’s own answer, not ${type}`);
    })();
  });
});
