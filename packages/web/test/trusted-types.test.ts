/**
 * Trusted Types are enforced for scripts (index.html's meta policy, on top of the service's CSP
 * header): a string put where markup or a script URL goes throws, so an injected string cannot
 * become markup or start a script. The app itself still works: its service worker and its two
 * workers (password strength, Argon2id) start through its own narrow policy.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { missingBrowser, type Device } from './harness/browser.js';
import { nick, openScene, type Scene } from './harness/scene.js';
import { chatEntry, seeMessage, send, signUp, startChat } from './harness/ui.js';

/** What the page reports for each sink refused on purpose below. */
const REFUSED = /require-trusted-types-for|requires 'Trusted(HTML|ScriptURL)' assignment|trusted-types|Trusted Type policy/;

describe('web client: Trusted Types', { skip: missingBrowser() }, () => {
  let scene: Scene;
  let alice: Device;
  let bob: Device;

  before(async () => {
    scene = await openScene();
    [alice, bob] = await Promise.all([scene.device('alice'), scene.device('bob')]);
  });
  after(async () => {
    await scene?.close();
  });

  test('require-trusted-types-for script is in force: a string assigned to innerHTML, or given as a worker script, throws; no other policy can be made', async () => {
    await scene.step(async () => {
      await alice.page.goto('/');
      const refused = await alice.page.evaluate(() => {
        const tries: Record<string, () => unknown> = {
          innerHTML: () => (document.body.innerHTML = '<img src=x onerror="window.__owned = 1">'),
          insertAdjacentHTML: () => document.body.insertAdjacentHTML('beforeend', '<b>x</b>'),
          'script src': () => (document.createElement('script').src = '/assets/x.js'),
          Worker: () => new Worker('/sw.js'),
          'a policy of its own': () =>
            (window as unknown as { trustedTypes: { createPolicy(n: string, r: object): unknown } }).trustedTypes.createPolicy('mine', {}),
          'a default policy': () =>
            (window as unknown as { trustedTypes: { createPolicy(n: string, r: object): unknown } }).trustedTypes.createPolicy('default', {}),
        };
        const out: Record<string, string> = {};
        for (const [name, f] of Object.entries(tries)) {
          try {
            f();
            out[name] = 'allowed';
          } catch (e) {
            out[name] = e instanceof TypeError ? 'TypeError' : String(e);
          }
        }
        return out;
      });
      assert.deepEqual(refused, {
        innerHTML: 'TypeError',
        insertAdjacentHTML: 'TypeError',
        'script src': 'TypeError',
        Worker: 'TypeError',
        'a policy of its own': 'TypeError',
        'a default policy': 'TypeError',
      });
      assert.equal(await alice.page.evaluate(() => (window as { __owned?: number }).__owned), undefined);
      // Each of the six refusals is reported twice (Chromium's console message and the page's violation
      // event), and the reports reach the test a moment later.
      let reported = 0;
      for (let i = 0, quiet = 0; i < 50 && quiet < 5; i++) {
        await new Promise((r) => setTimeout(r, 100));
        const n = alice.forgiveErrors(REFUSED);
        reported += n;
        quiet = n === 0 && reported >= 12 ? quiet + 1 : 0;
      }
      assert.equal(reported, 12, 'each refusal was reported as a policy violation');
    })();
  });

  test('the app works under it: sign-up (both workers), the service worker, and a message both ways', async () => {
    await scene.step(async () => {
      const names = { alice: nick('alice'), bob: nick('bob') };
      await Promise.all([signUp(alice.page, names.alice, 'alice trusted types'), signUp(bob.page, names.bob, 'bob trusted types')]);
      await alice.page.waitForFunction(() => navigator.serviceWorker.controller !== null);
      await startChat(bob.page, names.alice);
      const hello = scene.text('hello under trusted types');
      await send(bob.page, hello);
      await chatEntry(alice.page, names.bob).click();
      await seeMessage(alice.page, hello);
    })();
  });
});
