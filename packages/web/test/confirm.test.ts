/**
 * No mistake is one key away: "Sign out", "Leave room", "Remove member" and "Delete account" ask
 * first in a modal dialog. Escape and "Cancel" close it and change nothing (no request leaves the
 * page, the server's state stays), focus goes back to the button that opened it, and only the
 * dialog's button that repeats the action's name does it. Space or Enter on a focused "Sign out"
 * only opens the dialog. "Create account" refuses a mismatched confirmation and a weak password
 * with the reason, and sends nothing. Real server, real Chromium.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { seriousViolations } from './harness/axe.js';
import { missingBrowser, type Device } from './harness/browser.js';
import { accountState, roomState } from './harness/db.js';
import { nick, openScene, type Scene } from './harness/scene.js';
import {
  button,
  chatEntry,
  chatList,
  confirmPasswordInput,
  createRoom,
  nickInput,
  openChat,
  openRoomSettings,
  passwordInput,
  signedOut,
  signIn,
  signUp,
} from './harness/ui.js';
import { until } from './harness/wait.js';

/** How long "nothing happens" is watched after a dialog is dismissed. */
const QUIET_MS = 1_000;

/** Requests that change something (everything but GET), except the acks a live stream sends on its own. */
function recordChanges(page: Page): { list: string[]; stop: () => void } {
  const list: string[] = [];
  const onRequest = (req: { method(): string; url(): string }) => {
    const path = new URL(req.url()).pathname;
    if (req.method() !== 'GET' && path.startsWith('/api/') && path !== '/api/ack') list.push(`${req.method()} ${path}`);
  };
  page.on('request', onRequest);
  return { list, stop: () => page.off('request', onRequest) };
}

function dialog(page: Page): Locator {
  return page.getByRole('dialog');
}

async function isFocused(el: Locator): Promise<boolean> {
  return el.evaluate((node) => node === document.activeElement);
}

describe('web client: confirmations and sign-up checks', { skip: missingBrowser() }, () => {
  let scene: Scene;
  const people = { alice: nick('alice'), bob: nick('bob'), carol: nick('carol'), dave: nick('dave'), eve: nick('eve') };
  const password = 'a sturdy confirm passphrase';
  const room = `Careful ${randomBytes(3).toString('hex')}`;
  let alice: Device;
  let bob: Device;
  let carol: Device;

  before(async () => {
    scene = await openScene();
    [alice, bob, carol] = await Promise.all([scene.device('alice'), scene.device('bob'), scene.device('carol')]);
    // One after the other: three key derivations at once can starve a busy machine.
    await signUp(alice.page, people.alice, password);
    await signUp(bob.page, people.bob, password);
    await signUp(carol.page, people.carol, password);
    await createRoom(alice.page, room, [people.bob, people.carol]);
    for (const d of [bob, carol]) await openChat(d.page, room);
  });
  after(async () => {
    await scene?.close();
  });

  /**
   * Opens the dialog with `opener` twice, closing it once with Escape and once with "Cancel":
   * each time it names `mention`, closes, gives focus back to `opener`, and for QUIET_MS no
   * change is requested and `unchanged` holds.
   */
  async function dismissTwice(page: Page, opener: Locator, mention: string, unchanged: () => boolean): Promise<void> {
    for (const way of ['Escape', 'Cancel'] as const) {
      const changes = recordChanges(page);
      await opener.click();
      await dialog(page).waitFor();
      assert.match((await dialog(page).textContent()) ?? '', new RegExp(mention), 'the dialog says what it would do');
      if (way === 'Escape') await page.keyboard.press('Escape');
      else await dialog(page).getByRole('button', { name: 'Cancel', exact: true }).click();
      await dialog(page).waitFor({ state: 'detached' });
      assert.ok(await isFocused(opener), `after ${way}, focus is back on the button that opened the dialog`);
      const end = Date.now() + QUIET_MS;
      while (Date.now() < end) {
        assert.ok(unchanged(), `${way} changed nothing`);
        await new Promise((r) => setTimeout(r, 100));
      }
      changes.stop();
      assert.deepEqual(changes.list, [], `${way} sends no request`);
    }
  }

  /** Clicks the dialog's confirming button, which must be named exactly `action`. */
  async function confirm(page: Page, action: string): Promise<void> {
    await dialog(page).getByRole('button', { name: action, exact: true }).click();
  }

  test('the open confirmation dialog is named by its heading and has no serious axe violation', async () => {
    await scene.step(async () => {
      await button(alice.page, 'Sign out').click();
      await alice.page.getByRole('dialog', { name: 'Sign out?', exact: true }).waitFor();
      for (const colorScheme of ['light', 'dark'] as const) {
        await alice.page.emulateMedia({ colorScheme });
        assert.deepEqual(await seriousViolations(alice.page), [], `the Sign out dialog (${colorScheme})`);
      }
      await alice.page.emulateMedia({ colorScheme: 'light' });
      await alice.page.keyboard.press('Escape');
      await dialog(alice.page).waitFor({ state: 'detached' });
    })();
  });

  test('Space or Enter on a focused "Sign out" only opens the dialog, with focus on "Cancel"', async () => {
    await scene.step(async () => {
      const signOut = button(alice.page, 'Sign out');
      for (const key of ['Space', 'Enter']) {
        const changes = recordChanges(alice.page);
        await signOut.focus();
        await alice.page.keyboard.press(key);
        await dialog(alice.page).waitFor();
        assert.ok(await isFocused(dialog(alice.page).getByRole('button', { name: 'Cancel', exact: true })), `${key}: focus starts on Cancel`);
        assert.ok(await chatList(alice.page).isVisible(), `${key}: still signed in`);
        await alice.page.keyboard.press('Escape');
        await dialog(alice.page).waitFor({ state: 'detached' });
        changes.stop();
        assert.deepEqual(changes.list, [], `${key}: nothing was sent`);
      }
    })();
  });

  test('"Remove member": Escape and Cancel keep the member, confirming removes them', async () => {
    await scene.step(async () => {
      await openChat(alice.page, room);
      await openRoomSettings(alice.page);
      const opener = button(alice.page, `Remove ${people.carol}`);
      const isMember = () => roomState(scene.server.dbPath, room)?.members.includes(people.carol) === true;
      await dismissTwice(alice.page, opener, people.carol, isMember);
      await opener.click();
      await confirm(alice.page, 'Remove member');
      await until('carol removed on the server', () => (isMember() ? undefined : true));
      // A removed member keeps the room, read-only, saying why.
      await carol.page.getByText(`You were removed from ${room}`).first().waitFor();
    })();
  });

  test('"Leave room": Escape and Cancel keep the membership, confirming leaves', async () => {
    await scene.step(async () => {
      await openChat(bob.page, room);
      await openRoomSettings(bob.page);
      const opener = button(bob.page, 'Leave room');
      const isMember = () => roomState(scene.server.dbPath, room)?.members.includes(people.bob) === true;
      await dismissTwice(bob.page, opener, room, isMember);
      await opener.click();
      await confirm(bob.page, 'Leave room');
      await until('bob gone from the room on the server', () => (isMember() ? undefined : true));
      await chatEntry(bob.page, room).waitFor({ state: 'detached' });
    })();
  });

  test('"Delete account": after the password, Escape and Cancel keep the account, confirming deletes it', async () => {
    await scene.step(async () => {
      const dave = await scene.device('dave');
      await signUp(dave.page, people.dave, password);
      await button(dave.page, 'Settings').click();
      await dave.page.getByLabel('Password to confirm', { exact: true }).fill(password);
      const opener = button(dave.page, 'Delete account');
      await dismissTwice(dave.page, opener, people.dave, () => accountState(scene.server.dbPath, people.dave) === 'live');
      await opener.click();
      await confirm(dave.page, 'Delete account');
      await signedOut(dave.page, 60_000);
      assert.equal(accountState(scene.server.dbPath, people.dave), 'deleted');
    })();
  });

  test('"Sign out": Escape and Cancel keep the session, confirming signs out; signing in needs no confirmation', async () => {
    await scene.step(async () => {
      const opener = button(alice.page, 'Sign out');
      await dismissTwice(alice.page, opener, people.alice, () => true);
      assert.ok(await chatList(alice.page).isVisible(), 'still signed in');
      await opener.click();
      await confirm(alice.page, 'Sign out');
      await signedOut(alice.page);
      // "Sign in" ignores the empty "Confirm password" and the meter.
      await signIn(alice.page, people.alice, password);
    })();
  });

  test('"Create account" refuses a weak password or a mismatched confirmation, says why, and sends nothing', async () => {
    await scene.step(async () => {
      const eve = await scene.device('eve');
      const page = eve.page;
      await page.goto('/');
      const changes = recordChanges(page);
      const alert = page.getByRole('alert');
      const attempt = async (pw: string, again: string, reason: string) => {
        await passwordInput(page).fill(pw);
        await confirmPasswordInput(page).fill(again);
        await button(page, 'Create account').click();
        await alert.filter({ hasText: reason }).waitFor();
      };
      await nickInput(page).fill(people.eve);

      await attempt('sunshine', 'sunshine', 'This password is too easy to guess.');
      assert.match((await alert.textContent()) ?? '', /This is a frequently used password\./, "zxcvbn's warning is shown");
      const meter = page.getByRole('meter', { name: 'Password strength', exact: true });
      assert.equal(await meter.getAttribute('value'), '0');
      await attempt('Xq9#vLp', 'Xq9#vLp', 'Use at least 8 characters.');
      await attempt(password, `${password}!`, 'The passwords do not match.');
      await attempt(password, '', 'The passwords do not match.');
      assert.ok(await isFocused(confirmPasswordInput(page)), 'the confirmation is focused to be fixed');

      changes.stop();
      assert.deepEqual(changes.list, [], 'nothing was sent to the service');
      assert.equal(accountState(scene.server.dbPath, people.eve), 'none');

      // The meter follows a good password, and the toggle shows what was typed.
      await passwordInput(page).fill(password);
      await page.getByText(/^(Strong|Very strong)\.$/).waitFor();
      const show = button(page, 'Show password');
      await show.click();
      assert.equal(await show.getAttribute('aria-pressed'), 'true');
      assert.equal(await passwordInput(page).getAttribute('type'), 'text');
      assert.ok(await page.getByText('Your password cannot be reset.').isVisible(), 'the screen says the password cannot be reset');

      await confirmPasswordInput(page).fill(password);
      await button(page, 'Create account').click();
      await chatList(page).waitFor({ timeout: 60_000 });
      assert.equal(accountState(scene.server.dbPath, people.eve), 'live');
    })();
  });
});
