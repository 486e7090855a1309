/**
 * Pinned messages in the web client: "Pin" and "Unpin" in "Message actions" for any member of a
 * room; the region "Pinned messages" at the top of the chat lists each pinned message (sender and
 * text as it stands, the newest pin first) for every member; choosing one (click or Enter) scrolls
 * the log to it and focuses it; an edit changes the entry, a deletion removes it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { allViolations } from './harness/axe.js';
import { missingBrowser, type Device } from './harness/browser.js';
import { nick, openScene, type Scene } from './harness/scene.js';
import { actionsOffered, chooseAction, createRoom, messageBox, messageItem, openChat, seeMessage, send, signUp } from './harness/ui.js';
import { until } from './harness/wait.js';

function pinned(page: Page): Locator {
  return page.getByRole('region', { name: 'Pinned messages', exact: true });
}

/** The entries of "Pinned messages" as their text reads, top first (none when the region is hidden). */
async function pins(page: Page): Promise<string[]> {
  if (!(await pinned(page).isVisible())) return [];
  return (await pinned(page).getByRole('button').allInnerTexts()).map((t) => t.replace(/\s+/g, ' ').trim());
}

async function pinsAre(page: Page, expected: string[], who: string): Promise<void> {
  let last: string[] = [];
  try {
    await until(`${who}'s pinned messages to be ${JSON.stringify(expected)}`, async () => {
      last = await pins(page);
      return JSON.stringify(last) === JSON.stringify(expected) ? true : undefined;
    });
  } catch (e) {
    throw new Error(`${(e as Error).message}; they are ${JSON.stringify(last)}`, { cause: e });
  }
}

describe('web client: pinned messages', { skip: missingBrowser() }, () => {
  let scene: Scene;
  let alice: Device;
  let bob: Device;
  const names = { alice: nick('alice'), bob: nick('bob') };
  const room = `Pins ${nick('room')}`;
  const password = 'pins password one';
  let address: string;
  let date: string;

  before(async () => {
    scene = await openScene();
    [alice, bob] = await Promise.all([scene.device('alice'), scene.device('bob')]);
    await Promise.all([signUp(alice.page, names.alice, password), signUp(bob.page, names.bob, password)]);
    await createRoom(alice.page, room, [names.bob]);
    address = scene.text('the address is 12 Long Street');
    date = scene.text('we meet on Friday');
    await send(alice.page, address);
    await send(alice.page, date);
    await openChat(bob.page, room);
    await seeMessage(bob.page, date);
  });
  after(async () => {
    await scene?.close();
  });

  test('any member pins a message, and every member sees it in "Pinned messages", the newest pin first', async () => {
    await scene.step(async () => {
      assert.equal(await pinned(alice.page).isVisible(), false, 'no region while nothing is pinned');
      assert.ok((await actionsOffered(bob.page, address)).includes('Pin'), "bob may pin alice's message");
      await chooseAction(bob.page, address, 'Pin');
      await pinsAre(bob.page, [`${names.alice} ${address}`], 'bob');
      await pinsAre(alice.page, [`You ${address}`], 'alice');

      await chooseAction(alice.page, date, 'Pin');
      await pinsAre(alice.page, [`You ${date}`, `You ${address}`], 'alice');
      await pinsAre(bob.page, [`${names.alice} ${date}`, `${names.alice} ${address}`], 'bob');
      assert.ok((await actionsOffered(alice.page, date)).includes('Unpin'), 'a pinned message offers "Unpin"');

      for (const colorScheme of ['light', 'dark'] as const) {
        await bob.page.emulateMedia({ colorScheme });
        assert.deepEqual(await allViolations(bob.page), [], `Pinned messages (${colorScheme})`);
      }
      await bob.page.emulateMedia({ colorScheme: 'light' });
    })();
  });

  test('choosing a pinned message by click or Enter scrolls to it and focuses it', async () => {
    await scene.step(async () => {
      // Enough messages that the first ones scroll out of sight.
      // (Few, long ones: the outbox paces a sender to the service's budget of messages a minute.)
      for (let i = 0; i < 6; i++) await send(alice.page, scene.text(`filler ${i}\n${'a line of filler\n'.repeat(6)}end`));
      await seeMessage(bob.page, scene.typed.at(-1)!);
      const target = messageItem(bob.page, address);
      const inView = () =>
        target.evaluate((el) => {
          const log = el.closest('[role="log"]')!.getBoundingClientRect();
          const r = el.getBoundingClientRect();
          return r.bottom > log.top && r.top < log.bottom;
        });
      assert.equal(await inView(), false, 'the address scrolled away');

      await pinned(bob.page).getByRole('button').filter({ hasText: address }).click();
      await until('the address to be scrolled into view', async () => ((await inView()) ? true : undefined));
      assert.equal(await target.evaluate((el) => el === document.activeElement), true, 'the message has the focus');

      await messageBox(bob.page).focus();
      await bob.page.evaluate(() => {
        const log = document.querySelector('[role="log"]')!;
        log.scrollTop = log.scrollHeight;
      });
      await until('the address to scroll away', async () => ((await inView()) ? undefined : true));
      await pinned(bob.page).getByRole('button').filter({ hasText: date }).focus();
      await bob.page.keyboard.press('Enter');
      const dateRow = messageItem(bob.page, date);
      await until('the date message to take the focus', async () =>
        (await dateRow.evaluate((el) => el === document.activeElement)) ? true : undefined,
      );
    })();
  });

  test('an edit changes the pinned entry for everyone, a deletion removes it, and "Unpin" takes it away', async () => {
    await scene.step(async () => {
      const fixed = scene.text('the address is 14 Long Street');
      await chooseAction(alice.page, address, 'Edit');
      await messageBox(alice.page).fill(fixed);
      await messageBox(alice.page).press('Enter');
      await pinsAre(bob.page, [`${names.alice} ${date}`, `${names.alice} ${fixed}`], 'bob');
      await pinsAre(alice.page, [`You ${date}`, `You ${fixed}`], 'alice');

      await chooseAction(alice.page, date, 'Delete for everyone');
      await messageItem(alice.page, 'Message deleted').waitFor();
      await pinsAre(alice.page, [`You ${fixed}`], 'alice');
      await pinsAre(bob.page, [`${names.alice} ${fixed}`], 'bob');

      await chooseAction(bob.page, fixed, 'Unpin');
      await pinsAre(bob.page, [], 'bob');
      await pinsAre(alice.page, [], 'alice');
    })();
  });
});
