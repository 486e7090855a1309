/**
 * Safety numbers in the web client: both people see the same 60 digits with a QR code of them,
 * "Mark as verified" shows as "Verified" in the chat list, and when the service later serves the
 * verified peer a different key, the list says "Safety number changed", the alert says the
 * contact was verified, and sending waits for "Accept new key" (which clears "Verified").
 *
 * The key change is simulated on alice's device only: its GET /api/users/<bob> and GET
 * /api/contacts answers carry a fresh P-256 key in place of bob's, as a service substituting
 * keys would do. Accounts keep their key for life, so nothing else can change it.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { seriousViolations } from './harness/axe.js';
import { missingBrowser, type Device } from './harness/browser.js';
import { nick, openScene, type Scene } from './harness/scene.js';
import { button, chatEntry, ensureSignedIn, messageBox, messageLog, openChat, seeMessage, send, signUp, startChat } from './harness/ui.js';
import { until } from './harness/wait.js';

const DIGITS = /\b(\d{5} ){11}\d{5}\b/;

/** The accessible description of an entry, from the elements its aria-describedby names. */
function description(entry: Locator): Promise<string> {
  return entry.evaluate((el) =>
    (el.getAttribute('aria-describedby') ?? '')
      .split(/\s+/)
      .map((id) => document.getElementById(id)?.textContent ?? '')
      .join(' '),
  );
}

async function descriptionSays(page: Page, peer: string, what: string, present = true): Promise<void> {
  await until(`the chat entry of ${peer} ${present ? 'to say' : 'to stop saying'} "${what}"`, async () => {
    const d = await description(chatEntry(page, peer));
    return d.includes(what) === present ? true : undefined;
  });
}

/** A P-256 public key nobody here holds, in the wire form (65 bytes, base64url). */
function strangerKey(): string {
  const jwk = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey.export({ format: 'jwk' });
  return Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x!, 'base64url'), Buffer.from(jwk.y!, 'base64url')]).toString('base64url');
}

async function safetyDigits(page: Page): Promise<string> {
  const panel = page.getByRole('region', { name: 'Safety number' });
  await panel.getByText(DIGITS).waitFor();
  return DIGITS.exec(await panel.innerText())![0];
}

describe('web client: safety numbers', { skip: missingBrowser() }, () => {
  let scene: Scene;
  let alice: Device;
  let bob: Device;
  const names = { alice: nick('alice'), bob: nick('bob') };
  const password = 'safety password one';

  before(async () => {
    scene = await openScene();
    [alice, bob] = await Promise.all([scene.device('alice'), scene.device('bob')]);
    await Promise.all([signUp(alice.page, names.alice, password), signUp(bob.page, names.bob, password)]);
  });
  after(async () => {
    await scene?.close();
  });

  test('both see the same safety number with a QR code, and "Mark as verified" shows in the chat list', async () => {
    await scene.step(async () => {
      await startChat(alice.page, names.bob);
      await send(alice.page, scene.text('hello before comparing'));
      await openChat(bob.page, names.alice);

      await button(alice.page, 'Safety number').click();
      await button(bob.page, 'Safety number').click();
      const [a, b] = [await safetyDigits(alice.page), await safetyDigits(bob.page)];
      assert.equal(a, b, 'the safety number is the same on both sides');

      const qr = alice.page.getByRole('img', { name: 'QR code of the safety number' });
      await qr.waitFor();
      await alice.page.waitForFunction(
        (el) => (el as HTMLImageElement).complete && (el as HTMLImageElement).naturalWidth > 0,
        await qr.elementHandle(),
      );
      assert.match((await qr.getAttribute('src')) ?? '', /^data:image\/png;base64,/);

      await button(alice.page, 'Mark as verified').click();
      await button(alice.page, 'Mark as not verified').waitFor();
      await descriptionSays(alice.page, names.bob, 'Verified');
      assert.ok(await chatEntry(alice.page, names.bob).isVisible(), 'the entry is still found by a name starting with the nick');

      for (const scheme of ['light', 'dark'] as const) {
        await alice.page.emulateMedia({ colorScheme: scheme });
        assert.deepEqual(await seriousViolations(alice.page), [], `safety panel and verified entry (${scheme})`);
      }
      await alice.page.emulateMedia({ colorScheme: 'light' });
    })();
  });

  test('"Mark as not verified" takes the mark off, and marking again puts it back', async () => {
    await scene.step(async () => {
      await button(alice.page, 'Mark as not verified').click();
      await descriptionSays(alice.page, names.bob, 'Verified', false);
      await button(alice.page, 'Mark as verified').click();
      await descriptionSays(alice.page, names.bob, 'Verified');
    })();
  });

  test('a changed key of a verified contact is flagged in the list and holds sending until "Accept new key"', async () => {
    await scene.step(async () => {
      const fake = strangerKey();
      await alice.context.route(`**/api/users/${names.bob}`, async (route) => {
        const res = await route.fetch();
        await route.fulfill({ response: res, json: { ...((await res.json()) as object), publicKey: fake } });
      });
      await alice.context.route('**/api/contacts', async (route) => {
        if (route.request().method() !== 'GET') return route.fallback();
        const res = await route.fetch();
        const list = (await res.json()) as { nick: string; publicKey: string }[];
        await route.fulfill({ response: res, json: list.map((c) => (c.nick === names.bob ? { ...c, publicKey: fake } : c)) });
      });

      // A new page load fetches the contacts and bob's key afresh: the service now answers the other key.
      await alice.page.reload();
      await ensureSignedIn(alice.page, names.alice, password);
      await openChat(alice.page, names.bob);
      await descriptionSays(alice.page, names.bob, 'Safety number changed');
      await descriptionSays(alice.page, names.bob, 'Verified', false);

      const alert = alice.page.getByRole('alert').filter({ hasText: `The key of ${names.bob} has changed` });
      await alert.waitFor();
      assert.match(await alert.innerText(), /verified .*safety number before/i, 'the alert says the contact was verified');

      // Held: the Send button is off and Enter sends nothing.
      const held = scene.text('typed while the key change waits');
      await messageBox(alice.page).fill(held);
      assert.equal(await button(alice.page, 'Send').isDisabled(), true, 'Send is disabled while the change waits');
      await messageBox(alice.page).press('Enter');
      assert.equal(await messageLog(alice.page).getByText(held).count(), 0, 'nothing was sent');

      await button(alice.page, 'Accept new key').click();
      await alert.waitFor({ state: 'detached' });
      await descriptionSays(alice.page, names.bob, 'Safety number changed', false);
      // The accepted key was never compared: the contact is no longer shown as verified.
      await descriptionSays(alice.page, names.bob, 'Verified', false);

      await button(alice.page, 'Send').click();
      await seeMessage(alice.page, held);
      const sent = messageLog(alice.page).getByText(held);
      await until('the held message to be sent', async () =>
        (await messageLog(alice.page)
          .getByText(/Sending…|Not sent/)
          .count()) === 0
          ? true
          : undefined,
      );
      assert.equal(await sent.count(), 1);

      // The panel now tells that an earlier key was verified, and offers to verify this one.
      await button(alice.page, 'Safety number').click();
      await alice.page
        .getByRole('region', { name: 'Safety number' })
        .getByText(/verified an earlier key/)
        .waitFor();
      await button(alice.page, 'Mark as verified').waitFor();
    })();
  });
});
