/**
 * Disappearing messages in the web client: the chat header's "Disappearing messages" button opens
 * a dialog of radio buttons ("Off" … "4 weeks") and "Save"; the change is a line in both people's
 * logs; a message sent under the timer shows "Disappears in …" and, 30 seconds after each person
 * first saw it, is gone from their log, the search results and the chat list's last line. A
 * reader whose page was closed across the moment finds it gone at the next start, before anything
 * is shown.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { allViolations } from './harness/axe.js';
import { missingBrowser, type Device } from './harness/browser.js';
import { nick, openScene, type Scene } from './harness/scene.js';
import {
  button,
  chatEntry,
  chooseAction,
  messageItem,
  messageLog,
  openChat,
  searchBox,
  searchResults,
  seeMessage,
  send,
  signUp,
  startChat,
} from './harness/ui.js';
import { until } from './harness/wait.js';

const CHOICES = ['Off', '30 seconds', '5 minutes', '1 hour', '8 hours', '1 day', '1 week', '4 weeks'];
/** The timer, and the few seconds a device may take to notice. */
const EXPIRY_PATIENCE = 45_000;

async function gone(page: Page, text: string, who: string): Promise<void> {
  await until(
    `${who}'s log to lose "${text}"`,
    async () => ((await messageLog(page).getByText(text).count()) === 0 ? true : undefined),
    EXPIRY_PATIENCE,
  );
}

describe('web client: disappearing messages', { skip: missingBrowser() }, () => {
  let scene: Scene;
  let alice: Device;
  let bob: Device;
  const names = { alice: nick('alice'), bob: nick('bob') };
  const password = 'disappearing password one';

  before(async () => {
    scene = await openScene();
    [alice, bob] = await Promise.all([scene.device('alice'), scene.device('bob')]);
    await Promise.all([signUp(alice.page, names.alice, password), signUp(bob.page, names.bob, password)]);
    await startChat(alice.page, names.bob);
    const hello = scene.text('hello before the timer');
    await send(alice.page, hello);
    await openChat(bob.page, names.alice);
    await seeMessage(bob.page, hello);
  });
  after(async () => {
    await scene?.close();
  });

  test('the dialog offers the eight choices and "Save", and the change is a line in both logs', async () => {
    await scene.step(async () => {
      const opener = button(alice.page, 'Disappearing messages');
      await opener.click();
      const dialog = alice.page.getByRole('dialog', { name: 'Disappearing messages', exact: true });
      await dialog.waitFor();
      const radios = dialog.getByRole('radio');
      const labels = await radios.evaluateAll((els) => els.map((el) => (el.closest('label')?.textContent ?? '').trim()));
      assert.deepEqual(labels, CHOICES);
      for (const c of CHOICES) await dialog.getByRole('radio', { name: c, exact: true }).waitFor();
      assert.equal(await dialog.getByRole('radio', { name: 'Off', exact: true }).isChecked(), true, 'off at first');
      for (const colorScheme of ['light', 'dark'] as const) {
        await alice.page.emulateMedia({ colorScheme });
        assert.deepEqual(await allViolations(alice.page), [], `the Disappearing messages dialog (${colorScheme})`);
      }
      await alice.page.emulateMedia({ colorScheme: 'light' });

      // Escape changes nothing.
      await alice.page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'detached' });

      await opener.click();
      await dialog.getByRole('radio', { name: '30 seconds', exact: true }).check();
      await dialog.getByRole('button', { name: 'Save', exact: true }).click();
      await dialog.waitFor({ state: 'detached' });
      const line = `${names.alice} set disappearing messages to 30 seconds`;
      await seeMessage(alice.page, line);
      await seeMessage(bob.page, line);
      assert.equal(await messageLog(alice.page).getByText(line).count(), 1, 'one line for one change');
    })();
  });

  test('a message disappears from both logs, the search and the chat list 30 seconds after it was seen', async () => {
    await scene.step(async () => {
      const secret = scene.text('this one disappears');
      await send(alice.page, secret);
      await seeMessage(bob.page, secret);
      for (const page of [alice.page, bob.page]) {
        const timer = messageItem(page, secret).getByRole('timer');
        await timer.waitFor();
        assert.match((await timer.getAttribute('aria-label')) ?? '', /^Disappears in \d+ seconds?$/);
      }
      await searchBox(bob.page).fill(secret.split(' ').at(-1)!);
      await searchResults(bob.page).first().waitFor();

      await gone(alice.page, secret, 'alice');
      await gone(bob.page, secret, 'bob');
      await until('the search to lose it', async () => ((await searchResults(bob.page).count()) === 0 ? true : undefined));
      await searchBox(bob.page).fill('');
      for (const [page, peer] of [
        [alice.page, names.bob],
        [bob.page, names.alice],
      ] as const)
        assert.equal(await chatEntry(page, peer).getByText(secret).count(), 0, 'the chat list no longer shows it');
    })();
  });

  test('a reader whose page was closed across the expiry never sees the message again', async () => {
    await scene.step(async () => {
      const secret = scene.text('gone while the page was closed');
      await send(alice.page, secret);
      await seeMessage(bob.page, secret);
      // Bob's clock started when it showed; a moment for that to be stored.
      await bob.page.waitForTimeout(1_500);
      await bob.page.close();
      // Whatever bob's next page draws is recorded: the text must never appear in it.
      await bob.context.addInitScript((text: string) => {
        const seen = { it: false };
        (window as unknown as { __sawSecret: typeof seen }).__sawSecret = seen;
        new MutationObserver((records) => {
          for (const r of records) for (const n of Array.from(r.addedNodes)) if ((n.textContent ?? '').includes(text)) seen.it = true;
        }).observe(document, { subtree: true, childList: true, characterData: true });
      }, secret);

      await gone(alice.page, secret, 'alice');
      await new Promise((r) => setTimeout(r, 2_000));
      const page = await bob.reopen();
      await chatEntry(page, names.alice).waitFor();
      await openChat(page, names.alice);
      await seeMessage(page, `${names.alice} set disappearing messages to 30 seconds`);
      assert.equal(await messageLog(page).getByText(secret).count(), 0);
      assert.equal(await page.evaluate(() => (window as unknown as { __sawSecret: { it: boolean } }).__sawSecret.it), false, 'never drawn');
    })();
  });

  test('turning it off is a line in both logs, and later messages carry no timer', async () => {
    await scene.step(async () => {
      await button(alice.page, 'Disappearing messages').click();
      const dialog = alice.page.getByRole('dialog', { name: 'Disappearing messages', exact: true });
      assert.equal(await dialog.getByRole('radio', { name: '30 seconds', exact: true }).isChecked(), true, 'the current setting is checked');
      await dialog.getByRole('radio', { name: 'Off', exact: true }).check();
      await dialog.getByRole('button', { name: 'Save', exact: true }).click();
      const line = `${names.alice} turned off disappearing messages`;
      await seeMessage(alice.page, line);
      await seeMessage(bob.page, line);
      const stays = scene.text('this one stays');
      await send(alice.page, stays);
      await seeMessage(bob.page, stays);
      assert.equal(await messageItem(bob.page, stays).getByRole('timer').count(), 0);
    })();
  });

  test('a reply that stays shows nothing of the message it quoted once that one disappears', async () => {
    await scene.step(async () => {
      const dialog = alice.page.getByRole('dialog', { name: 'Disappearing messages', exact: true });
      // Each change is one more line in bob's log (earlier tests left the same lines there).
      const setTo = async (choice: string, line: string) => {
        const lines = () => messageLog(bob.page).getByText(line, { exact: true }).count();
        const had = await lines();
        await button(alice.page, 'Disappearing messages').click();
        await dialog.getByRole('radio', { name: choice, exact: true }).check();
        await dialog.getByRole('button', { name: 'Save', exact: true }).click();
        await until(`bob to see "${line}" once more`, async () => ((await lines()) > had ? true : undefined));
      };
      await setTo('30 seconds', `${names.alice} set disappearing messages to 30 seconds`);
      const secret = scene.text('quoted, then gone');
      await send(alice.page, secret);
      await seeMessage(bob.page, secret);
      // Off again, so the reply carries no timer and outlives what it quotes.
      await setTo('Off', `${names.alice} turned off disappearing messages`);
      await chooseAction(bob.page, secret, 'Reply');
      const reply = scene.text('a reply that stays');
      await send(bob.page, reply);
      assert.match(
        (await messageItem(bob.page, reply).textContent()) ?? '',
        new RegExp(secret.split(' ').at(-1)!),
        'the quote shows it while it lives',
      );

      await gone(bob.page, secret, 'bob');
      await gone(alice.page, secret, 'alice');
      for (const page of [alice.page, bob.page]) {
        await seeMessage(page, reply);
        const html = await messageLog(page).evaluate((el) => el.outerHTML);
        assert.ok(!html.includes(secret), 'no text or label of the log holds the quoted message');
      }
    })();
  });
});
