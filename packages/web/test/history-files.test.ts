/**
 * Photos and files travel with the history, in the web client over the real server: a file kept
 * on one device (downloaded once) reaches a new device through the history transfer and a fresh
 * browser profile through a history file made with "Include photos and files", and opens there
 * byte for byte after the service dropped its copy.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { missingBrowser, type Device } from './harness/browser.js';
import { download, sendFiles } from './harness/files.js';
import { nick, openScene, type Scene } from './harness/scene.js';
import { dropAttachmentsBehindClients } from './harness/tamper.js';
import { button, messageLog, openChat, seeMessage, signIn, signUp, startChat, statusShows } from './harness/ui.js';

const LONG = 120_000;

async function openSettings(page: Page): Promise<void> {
  if ((await button(page, 'Settings').getAttribute('aria-pressed')) !== 'true') await button(page, 'Settings').click();
  await button(page, 'Export history').waitFor();
}

describe('web client: photos and files with the history', { skip: missingBrowser() }, () => {
  let scene: Scene;
  const alice = { nick: nick('alice'), password: 'alice files password' };
  const bobNick = nick('bob');
  let laptop: Device;
  let bob: Device;
  const bytes = randomBytes(300_000);
  const caption = 'the plans, kept';

  before(async () => {
    scene = await openScene();
    laptop = await scene.device('alice laptop');
    bob = await scene.device('bob');
    await Promise.all([signUp(laptop.page, alice.nick, alice.password), signUp(bob.page, bobNick, 'bob files password')]);
    await startChat(bob.page, alice.nick);
    await sendFiles(bob.page, [{ name: 'plans.bin', mimeType: 'application/octet-stream', buffer: bytes }], caption);
    await statusShows(bob.page, caption, /Sent|Delivered|Read/, 60_000);
    // The laptop downloads it once, so it keeps it; then the service drops its copy.
    await openChat(laptop.page, bobNick);
    await seeMessage(laptop.page, caption);
    assert.ok((await download(laptop.page, 'plans.bin')).equals(bytes));
    await dropAttachmentsBehindClients(scene.server.dbPath);
  });
  after(async () => {
    await scene?.close();
  });

  test('a file kept on the old device reaches a new one with the history transfer', { timeout: 300_000 }, async () => {
    await scene.step(async () => {
      const phone = await scene.device('alice phone');
      await signIn(phone.page, alice.nick, alice.password);
      const dialog = laptop.page.getByRole('dialog', { name: 'New device signed in' });
      await dialog.waitFor({ timeout: 60_000 });
      await dialog.getByRole('button', { name: 'Send history', exact: true }).click();
      await phone.page.getByText(/^Received (\d+) of \1 messages and 1 of 1 file$/).waitFor({ timeout: LONG });
      await openChat(phone.page, bobNick);
      await seeMessage(phone.page, caption);
      assert.ok((await download(phone.page, 'plans.bin')).equals(bytes), 'the kept copy, byte for byte');
      await phone.close();
    })();
  });

  test('a history file made with "Include photos and files" carries the file to a fresh profile', { timeout: 300_000 }, async () => {
    await scene.step(async () => {
      await openSettings(laptop.page);
      const include = laptop.page.getByRole('checkbox', { name: 'Include photos and files', exact: true });
      assert.equal(await include.isChecked(), true, 'on by default');
      const [d] = await Promise.all([laptop.page.waitForEvent('download'), button(laptop.page, 'Export history').click()]);
      const path = join(scene.server.dir, `files-${d.suggestedFilename()}`);
      await d.saveAs(path);
      await laptop.page.getByText(`History saved as ${d.suggestedFilename()} with 1 file.`).waitFor();

      const tablet = await scene.device('alice tablet');
      await signIn(tablet.page, alice.nick, alice.password);
      await openSettings(tablet.page);
      await tablet.page.getByLabel('History file', { exact: true }).setInputFiles(path);
      await button(tablet.page, 'Import history').click();
      await tablet.page.getByText(/^Imported \d+ messages \(\d+ new\) with 1 file\.$/).waitFor({ timeout: 60_000 });
      await openChat(tablet.page, bobNick);
      await seeMessage(tablet.page, caption);
      assert.ok((await download(tablet.page, 'plans.bin')).equals(bytes), 'the file from the history file, byte for byte');
      assert.equal(await messageLog(tablet.page).getByText('File no longer available').count(), 0);
      await tablet.close();
    })();
  });
});
