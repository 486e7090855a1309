/**
 * A hostile service cannot lower the key-derivation work at sign-in unnoticed (docs/CRYPTO.md §3):
 * a browser that never saw the account warns before signing in with parameters weaker than new
 * accounts get, and sends nothing until the person chooses "Sign in anyway"; a browser that saw
 * the account's parameters refuses weaker ones the service serves later.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ApiClient, cookieFetch, KDF_DEFAULTS, KDF_MIN, Messenger } from '@svc/sdk';
import { missingBrowser } from './harness/browser.js';
import { nick, openScene, type Scene } from './harness/scene.js';
import { button, chatList, KDF_PATIENCE, nickInput, passwordInput, signIn, signUp, signedOut } from './harness/ui.js';

describe('web client: the key-derivation floor at sign-in', { skip: missingBrowser() }, () => {
  let scene: Scene;

  /** The work the service holds for an account, as it serves it to a sign-in. */
  async function servedWork(name: string): Promise<{ m: number; t: number; p: number }> {
    const k = await new ApiClient({ baseUrl: scene.server.origin, origin: scene.server.origin, fetch: cookieFetch() }).kdf(name);
    return { m: k.m, t: k.t, p: k.p };
  }

  before(async () => {
    // This file is about the key derivation: its devices run the app's real parameters.
    scene = await openScene({ realKdf: true });
  });
  after(async () => {
    await scene?.close();
  });

  test('weaker parameters than new accounts get: a warning, nothing sent, and "Sign in anyway" goes on', async () => {
    await scene.step(async () => {
      // An account made with the cheapest parameters, as a hostile service would serve them.
      const name = nick('weak');
      const password = 'weak kdf account password';
      const m = new Messenger({ api: new ApiClient({ baseUrl: scene.server.origin, origin: scene.server.origin, fetch: cookieFetch() }) });
      await m.register({ nick: name, password, kdf: KDF_MIN });

      const d = await scene.device('fresh browser');
      const logins: string[] = [];
      d.page.on('request', (r) => {
        if (r.method() === 'POST' && new URL(r.url()).pathname === '/api/login') logins.push(r.url());
      });
      await d.page.goto('/');
      await nickInput(d.page).fill(name);
      await passwordInput(d.page).fill(password);
      await button(d.page, 'Sign in').click();
      await d.page.getByText('Weaker protection than expected.').waitFor({ timeout: KDF_PATIENCE });
      assert.deepEqual(logins, [], 'no authKey left the browser before the person chose');
      d.takeErrors();
      await button(d.page, 'Sign in anyway').click();
      await chatList(d.page).waitFor({ timeout: KDF_PATIENCE });
      assert.equal(logins.length, 1);
    })();
  });

  test('a browser that saw an account’s parameters refuses weaker ones served later', async () => {
    await scene.step(async () => {
      const name = nick('strong');
      const password = 'strong kdf account password';
      const d = await scene.device('known browser');
      await signUp(d.page, name, password);
      // A browser without the test switch gives a new account the defaults of real users.
      assert.deepEqual(await servedWork(name), { m: KDF_DEFAULTS.m, t: KDF_DEFAULTS.t, p: KDF_DEFAULTS.p });
      await button(d.page, 'Sign out').click();
      await d.page.getByRole('dialog').getByRole('button', { name: 'Sign out', exact: true }).click();
      await signedOut(d.page);

      // The service now serves the floor values for this account.
      await d.page.route('**/api/kdf?*', async (route) => {
        const res = await route.fetch();
        const body = (await res.json()) as Record<string, unknown>;
        await route.fulfill({ response: res, json: { ...body, m: KDF_MIN.m, t: KDF_MIN.t } });
      });
      await nickInput(d.page).fill(name);
      await passwordInput(d.page).fill(password);
      await button(d.page, 'Sign in').click();
      await d.page
        .getByText(/weaker key derivation/)
        .first()
        .waitFor({ timeout: KDF_PATIENCE });
      assert.equal(await button(d.page, 'Sign in anyway').isVisible(), false, 'no way around it on a browser that knows better');
      d.takeErrors();
    })();
  });

  test('the test switch (other browser files): new accounts get the weakest parameters the bounds allow, and another device signs in without a warning', async () => {
    await scene.step(async () => {
      const name = nick('switched');
      const password = 'switched kdf account password';
      const d = await scene.device('switched browser', { realKdf: false });
      await signUp(d.page, name, password);
      assert.deepEqual(await servedWork(name), { m: KDF_MIN.m, t: KDF_MIN.t, p: KDF_MIN.p });
      const other = await scene.device('switched second device', { realKdf: false });
      await signIn(other.page, name, password);
      assert.equal(await button(other.page, 'Sign in anyway').isVisible(), false);
    })();
  });
});
