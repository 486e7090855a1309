/**
 * The app lock in the web client, over the real server: "Lock now" and "Lock after" in Settings;
 * locked, the page shows only the password field, "Unlock" and "Sign out", and no chat name or
 * message text anywhere (the DOM's text and the title), also after a reload; a wrong password
 * keeps it locked; the right one opens it as it was, with the messages that arrived meanwhile;
 * after the chosen idle time (the page's clock run forward) it locks by itself, unless there was
 * input; a dialog open at the lock goes with it; "Sign out" works from the lock screen.
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
  chatList,
  createRoom,
  ensureSignedIn,
  KDF_PATIENCE,
  nickInput,
  openChat,
  passwordInput,
  seeMessage,
  send,
  signUp,
  startChat,
} from './harness/ui.js';

const lockAfter = (page: Page) => page.getByRole('combobox', { name: 'Lock after', exact: true });

async function openSettings(page: Page): Promise<void> {
  if (!(await lockAfter(page).isVisible())) await button(page, 'Settings').click();
  await lockAfter(page).waitFor();
}

async function locked(page: Page): Promise<void> {
  await button(page, 'Unlock').waitFor({ timeout: 30_000 });
}

describe('web client: app lock', { skip: missingBrowser() }, () => {
  let scene: Scene;
  const alice = { nick: nick('alice'), password: 'a long lock password' };
  const bob = { nick: nick('bob'), password: 'another long password' };
  const room = `Lock room ${nick('r')}`;
  let laptop: Device;
  let bobs: Device;
  /** What must never show while locked: chat names and message texts. */
  const secrets: string[] = [bob.nick, room];

  before(async () => {
    scene = await openScene();
  });
  after(async () => {
    await scene?.close();
  });

  /** The page holds none of the secrets in its text or its title, and offers only the lock screen's controls. */
  async function showsNothing(page: Page): Promise<void> {
    const { text, title, html } = await page.evaluate(() => ({
      text: document.body.innerText,
      title: document.title,
      html: document.documentElement.outerHTML,
    }));
    for (const s of secrets) {
      assert.ok(!text.includes(s), `the locked page's text holds "${s}"`);
      assert.ok(!html.includes(s), `the locked page's DOM holds "${s}"`);
      assert.ok(!title.includes(s), `the locked page's title holds "${s}"`);
    }
    assert.ok(!page.url().includes(bob.nick), 'the address names no chat');
    assert.deepEqual(await page.getByRole('button').allTextContents(), ['Unlock', 'Sign out']);
    assert.equal(await passwordInput(page).count(), 1);
    assert.equal(await chatList(page).count(), 0);
  }

  async function unlock(page: Page, password: string): Promise<void> {
    await passwordInput(page).fill(password);
    await button(page, 'Unlock').click();
  }

  test('"Lock now" drops to a screen with only the password, "Unlock" and "Sign out", naming no chat, also after a reload', async () => {
    await scene.step(async () => {
      [laptop, bobs] = await Promise.all([scene.device('alice laptop'), scene.device('bob')]);
      await Promise.all([signUp(laptop.page, alice.nick, alice.password), signUp(bobs.page, bob.nick, bob.password)]);
      await startChat(laptop.page, bob.nick);
      const hello = scene.text('hello before the lock');
      secrets.push(hello);
      await send(laptop.page, hello);
      await createRoom(laptop.page, room, [bob.nick]);
      await openChat(laptop.page, bob.nick);
      await openSettings(laptop.page);
      assert.equal(await lockAfter(laptop.page).inputValue(), '0', '"Never" by default');
      assert.deepEqual(await lockAfter(laptop.page).locator('option').allTextContents(), ['Never', '1 minute', '5 minutes', '1 hour']);
      assert.deepEqual(await allViolations(laptop.page), [], 'axe, Settings');
      await openChat(laptop.page, bob.nick);
      await openSettings(laptop.page);
      await button(laptop.page, 'Lock now').click();
      await locked(laptop.page);
      await showsNothing(laptop.page);
      assert.deepEqual(await allViolations(laptop.page), [], 'axe, light, the lock screen');
      await laptop.page.emulateMedia({ colorScheme: 'dark' });
      assert.deepEqual(await allViolations(laptop.page), [], 'axe, dark, the lock screen');
      await laptop.page.emulateMedia({ colorScheme: 'light' });

      // No key is left in storage either: a reload asks for the password again.
      await laptop.page.reload();
      await locked(laptop.page);
      await showsNothing(laptop.page);
      const saved = await laptop.page.evaluate(async () => {
        const name = localStorage.getItem('svc.account') ?? '';
        const db = await new Promise<IDBDatabase>((resolve, reject) => {
          const r = indexedDB.open(name);
          r.onsuccess = () => resolve(r.result);
          r.onerror = () => reject(r.error ?? new Error('the database did not open'));
        });
        const v = await new Promise<unknown>((resolve) => {
          const r = db.transaction('kv').objectStore('kv').get('identity');
          r.onsuccess = () => resolve(r.result);
        });
        db.close();
        return v as Record<string, unknown> | undefined;
      });
      assert.ok(saved, 'the sign-in state is kept');
      assert.equal(saved.locked, true);
      assert.equal('privateKey' in saved, false, 'the identity key is not kept while locked');
    })();
  });

  test('a wrong password keeps it locked; the right one opens it as it was, with the messages that arrived meanwhile', async () => {
    await scene.step(async () => {
      await openChat(bobs.page, alice.nick);
      const meanwhile = scene.text('sent while the laptop was locked');
      secrets.push(meanwhile);
      await send(bobs.page, meanwhile);
      await chatEntry(bobs.page, room).waitFor();
      await openChat(bobs.page, room);
      const inRoom = scene.text('room message while locked');
      secrets.push(inRoom);
      await send(bobs.page, inRoom);
      await laptop.page.waitForTimeout(1_000);
      await showsNothing(laptop.page);

      await unlock(laptop.page, 'not the password at all');
      await laptop.page.getByText('Wrong password. The app stays locked.').waitFor({ timeout: KDF_PATIENCE });
      await showsNothing(laptop.page);

      await unlock(laptop.page, alice.password);
      await chatList(laptop.page).waitFor({ timeout: KDF_PATIENCE });
      assert.notEqual(await laptop.page.title(), 'Locked · Messenger');
      await openChat(laptop.page, bob.nick);
      await seeMessage(laptop.page, secrets[2]!);
      await seeMessage(laptop.page, meanwhile);
      await openChat(laptop.page, room);
      await seeMessage(laptop.page, inRoom);
      // Sending works as before.
      const back = scene.text('back after unlocking');
      await send(laptop.page, back);
      await seeMessage(bobs.page, back);
    })();
  });

  test('"Lock after 1 minute" locks once no input came for a minute, remembered on this device', async () => {
    await scene.step(async () => {
      const page = laptop.page;
      await page.clock.install();
      await page.reload();
      await ensureSignedIn(page, alice.nick, alice.password);
      await openSettings(page);
      await lockAfter(page).selectOption({ label: '1 minute' });
      await page.reload();
      await ensureSignedIn(page, alice.nick, alice.password);
      await openSettings(page);
      assert.equal(await lockAfter(page).inputValue(), '60000', 'the choice is remembered');

      // Input keeps it open.
      await page.clock.fastForward(40_000);
      await page.mouse.move(20, 20);
      await page.mouse.move(200, 200);
      await page.clock.fastForward(40_000);
      await page.waitForTimeout(300);
      assert.equal(await button(page, 'Unlock').count(), 0, 'input within the minute keeps the app open');

      await page.clock.fastForward(61_000);
      await locked(page);
      await showsNothing(page);
      await unlock(page, alice.password);
      await chatList(page).waitFor({ timeout: KDF_PATIENCE });
      await openSettings(page);
      await lockAfter(page).selectOption({ label: 'Never' });
      await page.clock.fastForward(3_700_000);
      await page.waitForTimeout(300);
      assert.equal(await button(page, 'Unlock').count(), 0, '"Never" never locks');
    })();
  });

  test('a lock in one tab locks the app in its other tabs, and an unlock in one opens them', async () => {
    await scene.step(async () => {
      const first = laptop.page;
      const second = await laptop.context.newPage();
      await second.goto('/');
      await chatList(second).waitFor({ timeout: KDF_PATIENCE });
      // A modal dialog open in the other tab lives in the top layer, outside the app: it goes too.
      await openChat(second, bob.nick);
      await button(second, 'Disappearing messages').click();
      await second.getByRole('dialog').waitFor();
      await openSettings(first);
      await button(first, 'Lock now').click();
      await locked(first);
      await locked(second);
      assert.equal(await second.locator('dialog').count(), 0, 'no dialog outlives the lock');
      await showsNothing(second);
      await unlock(first, alice.password);
      await chatList(first).waitFor({ timeout: KDF_PATIENCE });
      await chatList(second).waitFor({ timeout: KDF_PATIENCE });
      await second.close();
    })();
  });

  test('"Sign out" on the lock screen signs out', async () => {
    await scene.step(async () => {
      const page = laptop.page;
      await openSettings(page);
      await button(page, 'Lock now').click();
      await locked(page);
      await button(page, 'Sign out').click();
      await nickInput(page).waitFor();
      await page.reload();
      await nickInput(page).waitFor({ timeout: KDF_PATIENCE });
      assert.equal(await button(page, 'Unlock').count(), 0);
      await showsNoChat(page);
    })();
  });

  async function showsNoChat(page: Page): Promise<void> {
    const text = await page.evaluate(() => document.body.innerText);
    for (const s of secrets) assert.ok(!text.includes(s), `the signed-out page holds "${s}"`);
  }
});
