/**
 * Muting a chat in the web client: the "Mute" menu button of the chat header offers "Mute for 1
 * hour", "Mute for 8 hours" and "Mute always"; a muted chat's button reads "Unmute" and its chat
 * list entry says "Muted" (visibly and in its description); its messages add nothing to the tab
 * title's count unless one mentions the reader, and while the tab is in the background they raise no
 * notification unless one mentions the reader; the mute follows the person to their other device,
 * and so does unmuting.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { allViolations } from './harness/axe.js';
import { missingBrowser, type Device } from './harness/browser.js';
import { nick, openScene, type Scene } from './harness/scene.js';
import { button, chatEntry, openChat, seeMessage, send, signIn, signUp, startChat } from './harness/ui.js';
import { until } from './harness/wait.js';

const CHOICES = ['Mute for 1 hour', 'Mute for 8 hours', 'Mute always'];

/** The accessible description of a chat list entry. */
function description(entry: Locator): Promise<string> {
  return entry.evaluate((el) =>
    (el.getAttribute('aria-describedby') ?? '')
      .split(/\s+/)
      .map((id) => document.getElementById(id)?.textContent ?? '')
      .join(' '),
  );
}

/** Waits for the entry's description to hold `what` (or not); "Muted" is also checked on screen. */
async function entrySays(page: Page, name: string, what: string, present = true): Promise<void> {
  await until(`the chat entry of ${name} ${present ? 'to say' : 'to stop saying'} "${what}"`, async () => {
    const entry = chatEntry(page, name);
    const d = await description(entry);
    const shown = what !== 'Muted' || (await entry.getByText(what, { exact: true }).count()) > 0 === present;
    return d.includes(what) === present && shown ? true : undefined;
  });
}

/**
 * The laptop's init script. Playwright keeps every page visible, so the tab's visibility is
 * played by `__svcSetHidden` (with the visibilitychange event the browser would fire); every
 * notification the app shows through its service worker is noted in `__svcNotified` before it
 * is shown.
 */
const BACKGROUND_TAB = () => {
  const w = window as unknown as { __svcNotified: { title: string; body?: string; tag?: string }[]; __svcSetHidden: (h: boolean) => void };
  // about:blank is no secure context: no service worker there, and nothing to watch.
  if (typeof ServiceWorkerRegistration === 'undefined') return;
  let hidden = false;
  Object.defineProperty(Document.prototype, 'visibilityState', { configurable: true, get: () => (hidden ? 'hidden' : 'visible') });
  Object.defineProperty(Document.prototype, 'hidden', { configurable: true, get: () => hidden });
  w.__svcSetHidden = (h) => {
    hidden = h;
    document.dispatchEvent(new Event('visibilitychange'));
  };
  w.__svcNotified = [];
  const show = ServiceWorkerRegistration.prototype.showNotification;
  ServiceWorkerRegistration.prototype.showNotification = function (title: string, options?: NotificationOptions) {
    w.__svcNotified.push({ title, body: options?.body, tag: options?.tag });
    return show.call(this, title, options);
  };
};

interface Shown {
  title: string;
  body?: string;
  tag?: string;
}

function notified(page: Page): Promise<Shown[]> {
  return page.evaluate(() => (window as unknown as { __svcNotified: Shown[] }).__svcNotified);
}

/** Waits until `n` notifications were shown in all, and returns them. */
async function notifiedCount(page: Page, n: number): Promise<Shown[]> {
  const shown = await until(`${n} notification(s) shown`, async () => {
    const all = await notified(page);
    return all.length >= n ? all : undefined;
  });
  assert.equal(shown.length, n, `more notifications than expected: ${JSON.stringify(shown)}`);
  return shown;
}

function setHidden(page: Page, hidden: boolean): Promise<void> {
  return page.evaluate((h) => (window as unknown as { __svcSetHidden: (h: boolean) => void }).__svcSetHidden(h), hidden);
}

function muteMenu(page: Page): Locator {
  return page.getByRole('menu', { name: 'Mute', exact: true });
}

describe('web client: mute', { skip: missingBrowser() }, () => {
  let scene: Scene;
  let laptop: Device;
  let phone: Device;
  let bob: Device;
  const names = { alice: nick('alice'), bob: nick('bob') };
  const password = 'mute password one';

  before(async () => {
    scene = await openScene();
    // The laptop may show notifications, and its tab can be sent to the background.
    [laptop, bob] = await Promise.all([scene.device('alice laptop', { permissions: ['notifications'] }), scene.device('bob')]);
    await laptop.context.addInitScript(BACKGROUND_TAB);
    await Promise.all([signUp(laptop.page, names.alice, password), signUp(bob.page, names.bob, password)]);
    await startChat(laptop.page, names.bob);
    const hello = scene.text('hello bob');
    await send(laptop.page, hello);
    await openChat(bob.page, names.alice);
    await seeMessage(bob.page, hello);
    phone = await scene.device('alice phone');
    await signIn(phone.page, names.alice, password);
    await chatEntry(phone.page, names.bob).waitFor();
  });
  after(async () => {
    await scene?.close();
  });

  test('the "Mute" menu button offers its three choices by keyboard, and passes axe light and dark', async () => {
    await scene.step(async () => {
      const mute = button(laptop.page, 'Mute');
      assert.equal(await mute.getAttribute('aria-haspopup'), 'menu');
      await mute.focus();
      await laptop.page.keyboard.press('Enter');
      const menu = muteMenu(laptop.page);
      await menu.waitFor();
      assert.deepEqual(
        (await menu.getByRole('menuitem').allInnerTexts()).map((t) => t.trim()),
        CHOICES,
      );
      assert.equal(await mute.getAttribute('aria-expanded'), 'true');
      const focused = await laptop.page.evaluate(() => document.activeElement?.textContent);
      assert.equal(focused, CHOICES[0], 'the first choice takes the focus');
      for (const colorScheme of ['light', 'dark'] as const) {
        await laptop.page.emulateMedia({ colorScheme });
        assert.deepEqual(await allViolations(laptop.page), [], `the Mute menu (${colorScheme})`);
      }
      await laptop.page.emulateMedia({ colorScheme: 'light' });
      await laptop.page.keyboard.press('Escape');
      await menu.waitFor({ state: 'detached' });
      assert.equal(await laptop.page.evaluate(() => document.activeElement?.textContent), 'Mute', 'Escape gives the focus back');
    })();
  });

  test('a muted chat reads "Unmute" and "Muted" on this device and the other, and adds nothing to the title count', async () => {
    await scene.step(async () => {
      await button(laptop.page, 'Mute').click();
      await muteMenu(laptop.page).getByRole('menuitem', { name: 'Mute for 8 hours', exact: true }).click();
      await button(laptop.page, 'Unmute').waitFor();
      assert.equal(await button(laptop.page, 'Unmute').getAttribute('aria-haspopup'), null, 'Unmute is one click, no menu');
      await entrySays(laptop.page, names.bob, 'Muted');

      // The account's other device follows.
      await entrySays(phone.page, names.bob, 'Muted');
      await openChat(phone.page, names.bob);
      await button(phone.page, 'Unmute').waitFor();

      // Away from the chat, bob's messages count in the entry but not in the title.
      await laptop.page.getByRole('button', { name: 'Settings', exact: true }).click();
      await laptop.page.waitForFunction(() => document.title === 'Messenger');
      await send(bob.page, scene.text('one in a muted chat'));
      await send(bob.page, scene.text('two in a muted chat'));
      await entrySays(laptop.page, names.bob, '2 unread');
      assert.equal(await laptop.page.title(), 'Messenger', 'a muted chat adds nothing to the title');

      // A mention counts, muted or not.
      await send(bob.page, scene.text(`@${names.alice} look at this`));
      await entrySays(laptop.page, names.bob, '3 unread');
      await laptop.page.waitForFunction(() => document.title === '(3) Messenger');
    })();
  });

  test('"Unmute" on one device unmutes on the other', async () => {
    await scene.step(async () => {
      await button(phone.page, 'Unmute').click();
      await button(phone.page, 'Mute').waitFor();
      await entrySays(phone.page, names.bob, 'Muted', false);
      await entrySays(laptop.page, names.bob, 'Muted', false);
      await openChat(laptop.page, names.bob);
      await button(laptop.page, 'Mute').waitFor();
      await laptop.page.waitForFunction(() => document.title === 'Messenger');
      await laptop.page.getByRole('button', { name: 'Settings', exact: true }).click();
      await send(bob.page, scene.text('unmuted again'));
      await laptop.page.waitForFunction(() => document.title === '(1) Messenger');
    })();
  });

  test('in a background tab, a muted chat notifies only of a mention of the reader, and after "Unmute" of every message', async () => {
    await scene.step(async () => {
      // The phone leaves the chat: on screen there, it would read bob's messages at once, and its
      // read receipts would clear the laptop's unread count before the test could see it.
      await phone.page.getByRole('button', { name: 'Settings', exact: true }).click();
      await openChat(laptop.page, names.bob);
      await button(laptop.page, 'Mute').click();
      await muteMenu(laptop.page).getByRole('menuitem', { name: 'Mute always', exact: true }).click();
      await button(laptop.page, 'Unmute').waitFor();
      await laptop.page.waitForFunction(() => document.title === 'Messenger');
      const before = (await notified(laptop.page)).length;
      await setHidden(laptop.page, true);

      await send(bob.page, scene.text('a plain one while muted'));
      await entrySays(laptop.page, names.bob, '1 unread');
      assert.equal(await laptop.page.title(), 'Messenger', 'a muted chat adds nothing to the title');
      // The app asks for a notification before it counts a message in the chat list, so once the
      // entry counts both, any notification of either was asked for.
      await send(bob.page, scene.text(`@${names.alice} a mention while muted`));
      await entrySays(laptop.page, names.bob, '2 unread');
      const shown = await notifiedCount(laptop.page, before + 1);
      assert.deepEqual(
        shown.at(-1),
        { title: `@${names.bob}`, body: 'New message', tag: `dm:${names.bob}` },
        'the mention notifies, naming the chat only',
      );
      await laptop.page.waitForFunction(() => document.title === '(2) Messenger');

      // Back in front, the open chat is read; unmuted and in the background again, a plain message notifies.
      await setHidden(laptop.page, false);
      await laptop.page.waitForFunction(() => document.title === 'Messenger');
      await button(laptop.page, 'Unmute').click();
      await button(laptop.page, 'Mute').waitFor();
      await setHidden(laptop.page, true);
      await send(bob.page, scene.text('a plain one after unmute'));
      const again = await notifiedCount(laptop.page, before + 2);
      assert.deepEqual(again.at(-1), { title: `@${names.bob}`, body: 'New message', tag: `dm:${names.bob}` });
      await laptop.page.waitForFunction(() => document.title === '(1) Messenger');
      await setHidden(laptop.page, false);
    })();
  });
});
