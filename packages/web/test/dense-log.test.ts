/**
 * The denser log, in real Chromium over the real server: messages of one sender within 5 minutes
 * share one head, a one-line message in a group takes at most 44 px at 1280 × 800, one's own
 * message carries its time and status icon in its last line ("Sent"/"Delivered"/"Read" stay its
 * name), "Message actions" shows on hover and on keyboard focus; Up in an empty composer edits
 * one's last message, Escape cancels, Ctrl+K focuses "Search messages"; opening a chat with unread
 * messages shows "New messages" above the first of them and scrolls there, and "Jump to latest"
 * shows while the log is scrolled up and brings it back down.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { ApiClient, cookieFetch, KDF_MIN, Messenger } from '@svc/sdk';
import { allViolations } from './harness/axe.js';
import { missingBrowser, type Device } from './harness/browser.js';
import { nick, openScene, type Scene } from './harness/scene.js';
import {
  button,
  chatEntry,
  messageBox,
  messageItem,
  messageLog,
  openChat,
  searchBox,
  seeMessage,
  send,
  signIn,
  signUp,
  startChat,
  statusShows,
} from './harness/ui.js';
import { until } from './harness/wait.js';

const DESKTOP = { width: 1280, height: 800 };

async function height(l: Locator): Promise<number> {
  const box = await l.boundingBox();
  assert.ok(box, 'the row is on screen');
  return box.height;
}

/** The opacity of the "Message actions" button of the message holding `text`. */
function actionsOpacity(page: Page, text: string): Promise<string> {
  return messageItem(page, text)
    .getByRole('button', { name: 'Message actions', exact: true })
    .evaluate((b) => getComputedStyle(b).opacity);
}

/** Sends quickly: Enter in the composer, without waiting for each to show. */
async function burst(page: Page, texts: string[]): Promise<void> {
  for (const t of texts) {
    await messageBox(page).fill(t);
    await messageBox(page).press('Enter');
  }
  await seeMessage(page, texts.at(-1)!);
}

describe('web client: a denser log, unread and keyboard', { skip: missingBrowser() }, () => {
  let scene: Scene;
  const alice = nick('alice');
  const bob = nick('bob');
  const password = 'dense log password';
  let a: Device;
  let b: Device;

  before(async () => {
    scene = await openScene();
    [a, b] = await Promise.all([scene.device('alice', { viewport: DESKTOP }), scene.device('bob', { viewport: DESKTOP })]);
    await Promise.all([signUp(a.page, alice, password), signUp(b.page, bob, password)]);
  });
  after(async () => {
    await scene?.close();
  });

  test('messages of one sender within 5 minutes share one head, and a one-line message in a group takes at most 44 px', async () => {
    await scene.step(async () => {
      await startChat(a.page, bob);
      const texts = [scene.text('group one'), scene.text('group two'), scene.text('group three')];
      for (const t of texts) await send(a.page, t);
      await openChat(b.page, alice);
      for (const t of texts) await seeMessage(b.page, t);

      for (const [who, page] of [
        ['bob, reading', b.page],
        ['alice, writing', a.page],
      ] as const) {
        const head = await height(messageItem(page, texts[0]!));
        for (const t of texts.slice(1)) {
          const h = await height(messageItem(page, t));
          assert.ok(h <= 44, `${who}: a one-line message inside a group is ${h} px high, at most 44`);
        }
        if (page === b.page)
          assert.ok(head > (await height(messageItem(page, texts[1]!))), 'the head of the group is taller: it shows the name and time');
      }
      // The name is said for every message of the group (screen readers), shown only at its head.
      for (const t of texts) assert.match((await messageItem(b.page, t).textContent()) ?? '', new RegExp(alice), 'each row names its sender');
      const visibleNames = await messageLog(b.page)
        .locator('.from')
        .evaluateAll((els) => els.filter((e) => e.closest('.meta')!.getBoundingClientRect().width > 2).length);
      assert.equal(visibleNames, 1, 'the name shows once, at the head of the group');

      // A message of the other person starts a group of its own.
      const answer = scene.text('bob answers');
      await send(b.page, answer);
      await seeMessage(a.page, answer);
      const after = scene.text('alice again');
      await send(a.page, after);
      await seeMessage(b.page, after);
      assert.ok((await height(messageItem(b.page, after))) > (await height(messageItem(b.page, texts[1]!))), 'after another sender, a new head');
    })();
  });

  test('the time and status icon sit in the last line of one own message, and keep the names Sent, Delivered and Read', async () => {
    await scene.step(async () => {
      const t = scene.text('status in the last line');
      await send(a.page, t);
      await statusShows(a.page, t, 'Read');
      const item = messageItem(a.page, t);
      const status = item.getByRole('status', { name: 'Read', exact: true });
      assert.equal(await status.locator('svg').count(), 1, 'the status is an icon');
      assert.equal((await status.innerText()).trim(), '', 'no status words are shown');
      const [row, text, icon] = await Promise.all([item.boundingBox(), item.locator('.text').boundingBox(), status.boundingBox()]);
      assert.ok(row && text && icon);
      assert.ok(icon.y >= text.y - 2 && icon.y + icon.height <= text.y + text.height + 4, 'the icon is on the text line');
      assert.ok(row.height <= 44, `one own one-line message is ${row.height} px high`);
    })();
  });

  test('"Message actions" shows on hover and on keyboard focus, and takes no line of its own', async () => {
    await scene.step(async () => {
      const t = scene.text('actions on hover');
      await send(b.page, t);
      await seeMessage(a.page, t);
      await a.page.mouse.move(5, 5);
      assert.equal(await actionsOpacity(a.page, t), '0', 'hidden while the pointer is elsewhere');
      await messageItem(a.page, t).hover();
      assert.equal(await actionsOpacity(a.page, t), '1', 'shown on hover');
      await a.page.mouse.move(5, 5);
      await messageItem(a.page, t).getByRole('button', { name: 'Message actions', exact: true }).focus();
      assert.equal(await actionsOpacity(a.page, t), '1', 'shown on keyboard focus');
      await a.page.keyboard.press('Enter');
      const menu = a.page.getByRole('menu', { name: 'Message actions' });
      await menu.getByRole('menuitem', { name: 'Reply', exact: true }).waitFor();
      await a.page.keyboard.press('Escape');
      await menu.waitFor({ state: 'detached' });
      const row = await messageItem(a.page, t).boundingBox();
      const btn = await messageItem(a.page, t).getByRole('button', { name: 'Message actions', exact: true }).boundingBox();
      assert.ok(row && btn && btn.x >= row.x + row.width, 'the button sits beside the bubble, not on a line inside it');
    })();
  });

  test('Up in an empty composer edits the last own message, Escape cancels a reply or an edit, Ctrl+K focuses Search messages', async () => {
    await scene.step(async () => {
      const mine = scene.text('to be edited with Up');
      await send(a.page, mine);
      await messageBox(a.page).focus();
      await a.page.keyboard.press('ArrowUp');
      await a.page.getByText('Editing your message').waitFor();
      assert.equal(await messageBox(a.page).inputValue(), mine, 'the last own message is in the composer');
      await a.page.keyboard.press('End');
      await a.page.keyboard.type(' (fixed)');
      await a.page.keyboard.press('Enter');
      // The file's earlier tests spent much of the account's 30 messages a minute: the outbox may
      // hold the edit back until the budget comes back.
      await seeMessage(b.page, `${mine} (fixed)`, 70_000);

      await messageBox(a.page).focus();
      await a.page.keyboard.press('ArrowUp');
      await a.page.getByText('Editing your message').waitFor();
      await a.page.keyboard.press('Escape');
      await a.page.getByText('Editing your message').waitFor({ state: 'hidden' });
      assert.equal(await messageBox(a.page).inputValue(), '', 'Escape leaves the edit and its text');

      // A reply is cancelled by Escape too, also with the focus on the log.
      await messageItem(a.page, mine).getByRole('button', { name: 'Message actions', exact: true }).click();
      await a.page.getByRole('menuitem', { name: 'Reply', exact: true }).click();
      await a.page.getByText(/^Replying to /).waitFor();
      await messageLog(a.page).focus();
      await a.page.keyboard.press('Escape');
      await a.page.getByText(/^Replying to /).waitFor({ state: 'hidden' });

      // Text typed: Up moves the caret, it does not edit.
      await messageBox(a.page).fill('not empty');
      await a.page.keyboard.press('ArrowUp');
      assert.equal(await a.page.getByText('Editing your message').isVisible(), false, 'Up edits only from an empty composer');
      await messageBox(a.page).fill('');

      await a.page.keyboard.press('Control+k');
      await until('the search box has the focus', () => searchBox(a.page).evaluate((el) => el === document.activeElement || undefined));
    })();
  });

  test('opening a chat with unread messages shows "New messages" above the first and scrolls there; "Jump to latest" brings the log down', async () => {
    await scene.step(async () => {
      // Bob leaves the chat; alice writes a long run he has not read.
      await b.page.evaluate(() => (location.hash = '#/'));
      await messageBox(b.page).waitFor({ state: 'detached' });
      const unread = Array.from({ length: 20 }, (_, i) => scene.text(`unread ${String(i + 1).padStart(2, '0')}`));
      await burst(a.page, unread);
      let desc = '';
      await until(
        'all 20 reached bob',
        async () => {
          desc = await chatEntry(b.page, alice).evaluate((el) => document.getElementById(el.getAttribute('aria-describedby')!)?.textContent ?? '');
          return desc.includes('20 unread') || undefined;
        },
        90_000,
      ).catch((e: Error) => {
        throw new Error(`${e.message}; the entry says: ${desc}`);
      });

      await openChat(b.page, alice);
      const sep = messageLog(b.page).getByRole('separator', { name: 'New messages', exact: true });
      await sep.waitFor();
      await seeMessage(b.page, unread[0]!);
      // The separator is right above the first unread message, and on screen.
      const next = await sep.evaluate((el) => el.closest('li')!.nextElementSibling?.textContent ?? '');
      assert.ok(next.includes(unread[0]!), 'the first unread message follows the separator');
      const [logBox, sepBox] = await Promise.all([messageLog(b.page).boundingBox(), sep.boundingBox()]);
      assert.ok(logBox && sepBox && sepBox.y >= logBox.y && sepBox.y < logBox.y + logBox.height / 2, 'the log is scrolled to the separator');

      const jump = button(b.page, 'Jump to latest');
      await jump.waitFor();
      assert.equal(await messageItem(b.page, unread.at(-1)!).isVisible(), true);
      const lastBox = await messageItem(b.page, unread.at(-1)!).boundingBox();
      assert.ok(lastBox && logBox && lastBox.y > logBox.y + logBox.height, 'the newest message is below the fold');

      await jump.click();
      await jump.waitFor({ state: 'hidden' });
      const [log2, last2] = await Promise.all([messageLog(b.page).boundingBox(), messageItem(b.page, unread.at(-1)!).boundingBox()]);
      assert.ok(log2 && last2 && last2.y + last2.height <= log2.y + log2.height + 1, 'the newest message is in view');

      // Scrolled up again, the button comes back.
      await messageLog(b.page).evaluate((el) => el.scrollTo({ top: 0 }));
      await jump.waitFor();
      for (const scheme of ['light', 'dark'] as const) {
        await b.page.emulateMedia({ colorScheme: scheme });
        assert.deepEqual(await allViolations(b.page), [], `the log with New messages and Jump to latest (${scheme})`);
      }
      await b.page.emulateMedia({ colorScheme: 'light' });

      // Read now: opened again, no separator.
      await b.page.evaluate(() => (location.hash = '#/'));
      await messageBox(b.page).waitFor({ state: 'detached' });
      await openChat(b.page, alice);
      await seeMessage(b.page, unread.at(-1)!);
      assert.equal(await messageLog(b.page).getByRole('separator', { name: 'New messages' }).count(), 0, 'nothing new after reading');
    })();
  });

  test("the chat list's unread count follows reading on another of the account's devices", async () => {
    await scene.step(async () => {
      const phone = await scene.device('bob phone', { viewport: DESKTOP });
      await signIn(phone.page, bob, password);
      await b.page.evaluate(() => (location.hash = '#/'));
      await messageBox(b.page).waitFor({ state: 'detached' });
      const texts = [scene.text('read elsewhere one'), scene.text('read elsewhere two')];
      for (const t of texts) await send(a.page, t);
      const description = (page: Page) =>
        chatEntry(page, alice).evaluate((el) => document.getElementById(el.getAttribute('aria-describedby')!)?.textContent ?? '');
      await until('the phone counts 2 unread', async () => (await description(phone.page)).includes('2 unread') || undefined, 90_000);
      await openChat(b.page, alice);
      await seeMessage(b.page, texts[1]!);
      await until(
        'the phone counts none once the laptop read them',
        async () => !(await description(phone.page)).includes('unread') || undefined,
        90_000,
      );
    })();
  });

  test('a chat with more unread messages than the log draws at once opens at "New messages", then draws the rest, and "Jump to latest" reaches the newest', async () => {
    await scene.step(async () => {
      await b.page.evaluate(() => (location.hash = '#/'));
      await messageBox(b.page).waitFor({ state: 'detached' });
      // Carol, a Node client, writes far more than a screen while bob is not in the chat.
      const carol = new Messenger({ api: new ApiClient({ baseUrl: scene.server.origin, origin: scene.server.origin, fetch: cookieFetch() }) });
      const carolNick = nick('carol');
      await carol.register({ nick: carolNick, password: 'carol many unread password', kdf: KDF_MIN });
      await carol.ensureDevice('carol-node-1');
      const texts = Array.from({ length: 150 }, (_, i) => scene.text(`many new ${String(i + 1).padStart(3, '0')}`));
      // One after the other: the log's order is the service's, of acceptance.
      for (const t of texts) await carol.sendDm(bob, t);
      const entry = chatEntry(b.page, carolNick);
      await until(
        'all 150 reached bob',
        async () =>
          (await entry.count()) > 0 &&
          ((await entry.evaluate((el) => document.getElementById(el.getAttribute('aria-describedby')!)?.textContent ?? '')).includes('150 unread') ||
            undefined),
        90_000,
      );

      await openChat(b.page, carolNick);
      const sep = messageLog(b.page).getByRole('separator', { name: 'New messages', exact: true });
      await sep.waitFor();
      const next = await sep.evaluate((el) => el.closest('li')!.nextElementSibling?.textContent ?? '');
      assert.ok(next.includes(texts[0]!), 'the first unread message follows the separator');
      const [logBox, sepBox] = await Promise.all([messageLog(b.page).boundingBox(), sep.boundingBox()]);
      assert.ok(logBox && sepBox && sepBox.y >= logBox.y && sepBox.y < logBox.y + logBox.height / 2, 'the log is scrolled to the separator');
      // The rest is drawn after, a slice at a time: in the end every message is in the log, in order.
      await until('every message is drawn', async () => ((await messageLog(b.page).getAttribute('aria-busy')) === null ? true : undefined));
      const drawn = await messageLog(b.page)
        .getByRole('listitem')
        .evaluateAll((items) => items.map((li) => li.querySelector('.text')?.textContent ?? ''));
      assert.deepEqual(
        drawn.filter((t) => t.startsWith('many new ')),
        texts,
        'all 150, in order',
      );

      const jump = button(b.page, 'Jump to latest');
      await jump.waitFor();
      await jump.click();
      await jump.waitFor({ state: 'hidden' });
      const [log2, last2] = await Promise.all([messageLog(b.page).boundingBox(), messageItem(b.page, texts.at(-1)!).boundingBox()]);
      assert.ok(log2 && last2 && last2.y + last2.height <= log2.y + log2.height + 1, 'the newest message is in view');
      let desc = '';
      await until('the chat is read', async () => {
        desc = await entry.evaluate((el) => document.getElementById(el.getAttribute('aria-describedby')!)?.textContent ?? '');
        return !/\d+ unread/.test(desc) || undefined;
      }).catch((e: Error) => {
        throw new Error(`${e.message}; the entry says: ${desc}`);
      });
    })();
  });
});
