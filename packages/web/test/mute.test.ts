/**
 * Muting a chat in the web client: the "Mute" menu button of the chat header offers "Mute for 1
 * hour", "Mute for 8 hours" and "Mute always"; a muted chat's button reads "Unmute" and its chat
 * list entry says "Muted" (visibly and in its description); its messages add nothing to the tab
 * title's count unless one mentions the reader; the mute follows the person to their other device,
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
    [laptop, bob] = await Promise.all([scene.device('alice laptop'), scene.device('bob')]);
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
});
