/**
 * Mentions and drafts in the web client, over the real server: in a room, "@" and letters open
 * the listbox "Mention" of the members, chosen by keyboard or by click; a message that mentions
 * the reader is highlighted and said ("Mentions you"), and its chat says "Mentioned" in the list
 * until it is read. Text typed and not sent stays in its chat across a chat switch and a reload,
 * and the list shows it as "Draft: …" in place of the last message. No typed text is stored on
 * the server.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { allViolations } from './harness/axe.js';
import { missingBrowser, type Device } from './harness/browser.js';
import { plaintextFound } from './harness/db.js';
import { nick, openScene, type Scene } from './harness/scene.js';
import { repoRoot } from './harness/server.js';
import {
  button,
  chatEntry,
  chatList,
  createRoom,
  ensureSignedIn,
  messageBox,
  messageItem,
  openChat,
  seeMessage,
  send,
  signUp,
  startChat,
} from './harness/ui.js';

const mentionList = (page: Page) => page.getByRole('listbox', { name: 'Mention', exact: true });
const option = (page: Page, name: string) => mentionList(page).getByRole('option', { name, exact: true });

/** The chat list entry's description (unread count, "Mentioned", the last message or the draft). */
async function description(page: Page, name: string): Promise<string> {
  // Read in one step: the list renders anew as messages come.
  return chatEntry(page, name).evaluate((el) => document.getElementById(el.getAttribute('aria-describedby') ?? '')?.textContent ?? '');
}

/** Waits until the open chat's composer holds `value` (a chat switch renders a new one, and its draft comes from the store). */
async function holds(page: Page, value: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const v = await messageBox(page).inputValue();
    if (v === value) return;
    if (Date.now() > deadline) assert.equal(v, value);
    await page.waitForTimeout(100);
  }
}

async function describedAs(page: Page, name: string, has: string, want = true): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const d = await description(page, name);
    if (d.includes(has) === want) return;
    if (Date.now() > deadline) assert.fail(`the entry of ${name} ${want ? 'should' : 'should not'} say "${has}"; it says: ${d}`);
    await page.waitForTimeout(200);
  }
}

/** The option the textbox names as its active descendant. */
async function activeOption(page: Page): Promise<string | null> {
  const id = await messageBox(page).getAttribute('aria-activedescendant');
  return id ? page.locator(`[id="${id}"]`).getAttribute('aria-label') : null;
}

describe('web client: mentions and drafts', { skip: missingBrowser() }, () => {
  let scene: Scene;
  const people = { alice: nick('alice'), bob: nick('bob'), carol: nick('carol') };
  const password = 'a long mention password';
  const room = `Mentions ${nick('r')}`;
  let alice: Device;
  let bob: Device;
  let carol: Device;

  before(async () => {
    scene = await openScene();
  });
  after(async () => {
    await scene?.close();
  });

  test('typing "@" and letters in a room lists the members; arrows and Enter insert "@nick ", Escape closes', async () => {
    await scene.step(async () => {
      [alice, bob, carol] = await Promise.all([scene.device('alice'), scene.device('bob'), scene.device('carol')]);
      await Promise.all([
        signUp(alice.page, people.alice, password),
        signUp(bob.page, people.bob, password),
        signUp(carol.page, people.carol, password),
      ]);
      await createRoom(alice.page, room, [people.bob, people.carol]);
      const box = messageBox(alice.page);
      await box.click();
      await box.pressSequentially('hello @');
      // Every member but oneself, alphabetically.
      await mentionList(alice.page).waitFor();
      assert.deepEqual(await mentionList(alice.page).getByRole('option').allTextContents(), [`@${people.bob}`, `@${people.carol}`]);
      assert.equal(await box.getAttribute('aria-controls'), await mentionList(alice.page).getAttribute('id'));
      assert.equal(await activeOption(alice.page), people.bob);
      await box.press('ArrowDown');
      assert.equal(await activeOption(alice.page), people.carol);
      assert.equal(await option(alice.page, people.carol).getAttribute('aria-selected'), 'true');
      await box.press('ArrowUp');
      assert.equal(await activeOption(alice.page), people.bob);
      // Letters filter the list.
      await box.pressSequentially('c');
      assert.deepEqual(await mentionList(alice.page).getByRole('option').allTextContents(), [`@${people.carol}`]);
      assert.deepEqual(await allViolations(alice.page), [], 'axe, light, the list open');
      await alice.page.emulateMedia({ colorScheme: 'dark' });
      assert.deepEqual(await allViolations(alice.page), [], 'axe, dark, the list open');
      await alice.page.emulateMedia({ colorScheme: 'light' });
      await box.press('Enter');
      await mentionList(alice.page).waitFor({ state: 'hidden' });
      assert.equal(await box.inputValue(), `hello @${people.carol} `, 'Enter put the nick in and did not send');
      assert.equal(await box.getAttribute('aria-activedescendant'), null);

      // Escape closes the list and keeps the text.
      await box.pressSequentially('and @b');
      await mentionList(alice.page).waitFor();
      await box.press('Escape');
      await mentionList(alice.page).waitFor({ state: 'hidden' });
      assert.equal(await box.inputValue(), `hello @${people.carol} and @b`);
      // A click on an option inserts it too.
      await box.pressSequentially('o');
      await option(alice.page, people.bob).click();
      assert.equal(await box.inputValue(), `hello @${people.carol} and @${people.bob} `);
      await expectFocused(alice.page);
    })();
  });

  test('a message that mentions the reader is highlighted, and its chat shows "Mentioned" until read', async () => {
    await scene.step(async () => {
      const text = scene.text(`@${people.bob} can you bring the map?`);
      await chatEntry(bob.page, room).waitFor();
      await messageBox(alice.page).fill('');
      await send(alice.page, text);
      // Bob has the room closed: the list says he was mentioned.
      await describedAs(bob.page, room, 'Mentioned');
      await chatList(bob.page).getByText('Mentioned', { exact: true }).waitFor();
      // Carol was not mentioned.
      await chatEntry(carol.page, room).waitFor();
      await describedAs(carol.page, room, '1 unread');
      assert.ok(!(await description(carol.page, room)).includes('Mentioned'));

      await openChat(bob.page, room);
      await seeMessage(bob.page, text);
      const item = messageItem(bob.page, text);
      await item.getByText('Mentions you').waitFor();
      assert.match((await item.getAttribute('class')) ?? '', /mentions-me/);
      await describedAs(bob.page, room, 'Mentioned', false);
      assert.deepEqual(await allViolations(bob.page), [], 'axe, light, a highlighted mention');
      await bob.page.emulateMedia({ colorScheme: 'dark' });
      assert.deepEqual(await allViolations(bob.page), [], 'axe, dark, a highlighted mention');
      await bob.page.emulateMedia({ colorScheme: 'light' });

      // Carol reads it without highlight; her own mention is highlighted for her.
      await openChat(carol.page, room);
      await seeMessage(carol.page, text);
      assert.equal(await messageItem(carol.page, text).getByText('Mentions you').count(), 0);
      const hers = scene.text(`thanks @${people.carol}`);
      await send(bob.page, hers);
      await messageItem(carol.page, hers).getByText('Mentions you').waitFor();
      // The sender's own copy is not highlighted.
      assert.equal(await messageItem(bob.page, hers).getByText('Mentions you').count(), 0);

      // Still "Mentioned" after a reload when it was not read.
      await bob.page.goto('/#/');
      const again = scene.text(`@${people.bob} one more`);
      await send(alice.page, again);
      await describedAs(bob.page, room, 'Mentioned');
      await bob.page.reload();
      await ensureSignedIn(bob.page, people.bob, password);
      await describedAs(bob.page, room, 'Mentioned');
      await openChat(bob.page, room);
      await seeMessage(bob.page, again);
      await describedAs(bob.page, room, 'Mentioned', false);
    })();
  });

  test('a mention of the reader, as the README shows it', async () => {
    await scene.step(async () => {
      const dir = process.env.UPDATE_SCREENSHOTS === '1' ? join(repoRoot, 'docs/screenshots') : join(scene.server.dir, 'screenshots');
      mkdirSync(dir, { recursive: true });
      const viewport = { width: 1280, height: 800 };
      const [maya, sam, lee] = await Promise.all([
        scene.device('maya', { viewport }),
        scene.device('sam', { viewport }),
        scene.device('lee', { viewport }),
      ]);
      await Promise.all([signUp(maya.page, 'maya', password), signUp(sam.page, 'sam', password), signUp(lee.page, 'lee', password)]);
      await createRoom(sam.page, 'Weekend trip', ['maya', 'lee']);
      await send(sam.page, 'The cabin is booked for Saturday.');
      await send(sam.page, '@maya can you bring the map?');
      await chatEntry(maya.page, 'Weekend trip').waitFor();
      await describedAs(maya.page, 'Weekend trip', 'Mentioned');
      await openChat(maya.page, 'Weekend trip');
      await messageItem(maya.page, '@maya can you bring the map?').getByText('Mentions you').waitFor();
      const box = messageBox(maya.page);
      await box.click();
      await box.pressSequentially('Sure! And ');
      await box.pressSequentially('@');
      await mentionList(maya.page).waitFor();
      const file = join(dir, 'mention.png');
      await maya.page.screenshot({ path: file });
      const png = readFileSync(file);
      assert.ok(png.length > 1000 && png.subarray(1, 4).toString() === 'PNG', 'mention.png is a picture');
    })();
  });

  test('text typed and not sent stays in its chat across a chat switch and a reload, shown as "Draft: …" in the list', async () => {
    await scene.step(async () => {
      const draft = scene.text('half a thought about the route');
      await openChat(alice.page, room);
      await messageBox(alice.page).fill(`${draft}\nsecond line`);
      await startChat(alice.page, people.bob);
      await holds(alice.page, '');
      await describedAs(alice.page, room, `Draft: ${draft}`);
      const preview = chatList(alice.page).getByText(`Draft: ${draft}`, { exact: true });
      await preview.waitFor();
      assert.ok(!(await description(alice.page, room)).includes('second line'), 'the list shows the first line');

      // A second draft in the DM, then both survive a reload.
      const dmDraft = scene.text('a word for bob alone');
      await messageBox(alice.page).fill(dmDraft);
      await openChat(alice.page, room);
      await holds(alice.page, `${draft}\nsecond line`);
      await alice.page.reload();
      await ensureSignedIn(alice.page, people.alice, password);
      await describedAs(alice.page, room, `Draft: ${draft}`);
      await describedAs(alice.page, people.bob, `Draft: ${dmDraft}`);
      // The room, open at the reload, holds its draft.
      await messageBox(alice.page).waitFor();
      await holds(alice.page, `${draft}\nsecond line`);
      await openChat(alice.page, people.bob);
      await holds(alice.page, dmDraft);

      // Sending clears the draft; the list shows the last message again.
      await button(alice.page, 'Send').click();
      await seeMessage(alice.page, dmDraft);
      await describedAs(alice.page, people.bob, 'Draft:', false);
      await describedAs(alice.page, people.bob, `last message You: ${dmDraft}`);
      await alice.page.reload();
      await ensureSignedIn(alice.page, people.alice, password);
      // A sent draft does not come back.
      await messageBox(alice.page).waitFor();
      await alice.page.waitForTimeout(500);
      await holds(alice.page, '');
      await describedAs(alice.page, room, `Draft: ${draft}`);
    })();
  });

  test('no typed text or draft reached the server', () => {
    assert.deepEqual(plaintextFound(scene.server.dbPath, scene.typed), []);
  });
});

async function expectFocused(page: Page): Promise<void> {
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'composer-text', 'the textbox keeps focus');
}
