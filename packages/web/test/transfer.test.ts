/**
 * History on every device, in the web client over the real server: a new device receives the
 * history from an old one after "Send history", with the progress bar on both; "Not now" sends
 * nothing; the sealed history file is exported and imported on a fresh browser profile; a damaged
 * file or one of another account is refused with a clear error; the database holds no text.
 *
 * The 1,000 messages are written by a Node SDK client of a second person, which the harness's
 * raised message limit lets send quickly. The transfer itself goes as an archive in the
 * attachment store named by one message in the private room.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ApiClient, cookieFetch, EXPORT_ERRORS, KDF_MIN, Messenger } from '@svc/sdk';
import type { Page } from 'playwright-core';
import { missingBrowser, type Device } from './harness/browser.js';
import { ownRoomEnvelopes, plaintextFound, queueLength } from './harness/db.js';
import { nick, openScene, type Scene } from './harness/scene.js';
import { button, chatEntry, openChat, seeMessage, send, signIn, signUp, startChat } from './harness/ui.js';
import { until } from './harness/wait.js';

const N = 1000;
const LONG = 180_000;

function newDeviceDialog(page: Page) {
  return page.getByRole('dialog', { name: 'New device signed in' });
}

function transferBar(page: Page) {
  return page.getByRole('progressbar', { name: 'History transfer' });
}

async function openSettings(page: Page): Promise<void> {
  if ((await button(page, 'Settings').getAttribute('aria-pressed')) !== 'true') await button(page, 'Settings').click();
  await button(page, 'Export history').waitFor();
}

/** Types a search and returns the number of results. */
async function searchCount(page: Page, q: string): Promise<number> {
  await page.getByRole('searchbox', { name: 'Search messages' }).fill(q);
  const results = page.getByRole('list', { name: 'Search results' });
  await results.getByRole('listitem').first().waitFor();
  return results.getByRole('listitem').count();
}

describe('web client: history on every device', { skip: missingBrowser() }, () => {
  let scene: Scene;
  const alice = { nick: nick('alice'), password: 'alice history password' };
  const carol = { nick: nick('carol'), password: 'carol history password' };
  const bobNick = nick('bob');
  let aliceLaptop: Device;
  let alicePhone: Device;
  let exportPath = '';
  const texts: string[] = [];

  before(async () => {
    scene = await openScene();
  });
  after(async () => {
    await scene?.close();
  });

  test(
    'a new device receives 1,000 messages of history with the progress bar after "Send history" on the old one',
    { timeout: 600_000 },
    async () => {
      await scene.step(async () => {
        aliceLaptop = await scene.device('alice laptop');
        await signUp(aliceLaptop.page, alice.nick, alice.password);

        // Bob, a Node program on the SDK, writes 1,000 messages to alice's only device.
        const bob = new Messenger({ api: new ApiClient({ baseUrl: scene.server.origin, origin: scene.server.origin, fetch: cookieFetch() }) });
        await bob.register({ nick: bobNick, password: 'bob history password', kdf: KDF_MIN });
        await bob.ensureDevice('bob-node-1');
        for (let i = 0; i < N; i++) texts.push(scene.text(`history ${String(i).padStart(4, '0')}`));
        for (let i = 0; i < N; i += 20) await Promise.all(texts.slice(i, i + 20).map((t) => bob.sendDm(alice.nick, t)));
        const laptopId = aliceLaptop.deviceIds.at(-1)!;
        // Stored on the laptop: its queue is empty once every envelope is acknowledged.
        await until('the laptop to store all 1,000 messages', () => (queueLength(scene.server.dbPath, laptopId) === 0 ? true : undefined), LONG);
        await chatEntry(aliceLaptop.page, bobNick).waitFor();

        // A new device: a sign-in on an empty browser profile asks the other devices.
        alicePhone = await scene.device('alice phone');
        await signIn(alicePhone.page, alice.nick, alice.password);
        const dialog = newDeviceDialog(aliceLaptop.page);
        await dialog.waitFor({ timeout: 60_000 });
        await dialog.getByRole('button', { name: 'Not now', exact: true }).waitFor();
        await dialog.getByRole('button', { name: 'Send history', exact: true }).click();
        await dialog.waitFor({ state: 'hidden' });

        // Both devices say how far it is; the new one counts up to every message.
        const bar = transferBar(alicePhone.page);
        await bar.waitFor({ timeout: 60_000 });
        assert.equal(await bar.getAttribute('aria-valuemin'), '0');
        assert.equal(await bar.getAttribute('aria-valuemax'), String(N));
        await alicePhone.page
          .getByText(/^Received [\d,]+ of 1,000 messages$/)
          .first()
          .waitFor();
        await aliceLaptop.page
          .getByText(/^Sent [\d,]+ of 1,000 messages$/)
          .first()
          .waitFor({ timeout: LONG });
        await alicePhone.page.getByText('Received 1,000 of 1,000 messages').waitFor({ timeout: LONG });
        assert.equal(await bar.getAttribute('aria-valuenow'), String(N));
        // Gone a few seconds after it is done.
        await bar.waitFor({ state: 'hidden', timeout: 30_000 });

        // The chat is there, in order, and nothing of it is unread; the Devices room is no chat.
        await chatEntry(alicePhone.page, bobNick).waitFor();
        assert.equal(await chatEntry(alicePhone.page, 'Devices').count(), 0);
        assert.equal(await chatEntry(aliceLaptop.page, 'Devices').count(), 0);
        assert.equal(await alicePhone.page.title(), 'Messenger');
        await openChat(alicePhone.page, bobNick);
        await seeMessage(alicePhone.page, texts.at(-1)!);
        // The oldest message arrived too (search reads the whole history on the device).
        assert.equal(await searchCount(alicePhone.page, texts[0]!), 1);
        assert.equal(await searchCount(alicePhone.page, 'history'), 50);
      })();
    },
  );

  test('"Not now" sends nothing: no history arrives and no chunk reaches the server', { timeout: 300_000 }, async () => {
    await scene.step(async () => {
      const laptop = await scene.device('carol laptop');
      await signUp(laptop.page, carol.nick, carol.password);
      await startChat(laptop.page, bobNick);
      const text = scene.text('carol keeps this on the laptop');
      await send(laptop.page, text);

      const phone = await scene.device('carol phone');
      await signIn(phone.page, carol.nick, carol.password);
      const dialog = newDeviceDialog(laptop.page);
      await dialog.waitFor({ timeout: 60_000 });
      const since = Date.now();
      await dialog.getByRole('button', { name: 'Not now', exact: true }).click();
      await dialog.waitFor({ state: 'hidden' });

      // The laptop would have offered at once; give it the time a send takes, then look.
      await laptop.page.waitForTimeout(5_000);
      assert.equal(ownRoomEnvelopes(scene.server.dbPath, carol.nick, 'Devices', since), 0, 'nothing went into the private room after "Not now"');
      assert.equal(await transferBar(phone.page).count(), 0);
      assert.equal(await transferBar(laptop.page).count(), 0);
      assert.equal(await phone.page.getByText(text).count(), 0);
      await laptop.close();
      await phone.close();
    })();
  });

  test('the history exported on one device imports on a fresh browser profile, once, without duplicates', { timeout: 300_000 }, async () => {
    await scene.step(async () => {
      await openSettings(aliceLaptop.page);
      assert.equal(
        await aliceLaptop.page.getByRole('checkbox', { name: 'Include photos and files', exact: true }).isChecked(),
        true,
        'on by default',
      );
      const [download] = await Promise.all([aliceLaptop.page.waitForEvent('download'), button(aliceLaptop.page, 'Export history').click()]);
      assert.match(download.suggestedFilename(), new RegExp(`^svc-history-${alice.nick}-\\d{4}-\\d\\d-\\d\\d\\.svch$`));
      exportPath = join(scene.server.dir, download.suggestedFilename());
      await download.saveAs(exportPath);
      await aliceLaptop.page.getByText(`History saved as ${download.suggestedFilename()}.`).waitFor();

      const tablet = await scene.device('alice tablet');
      await signIn(tablet.page, alice.nick, alice.password);
      await openSettings(tablet.page);
      const file = tablet.page.getByLabel('History file', { exact: true });
      await file.setInputFiles(exportPath);
      await button(tablet.page, 'Import history').click();
      await tablet.page.getByText(`Imported 1,000 messages (1,000 new).`).waitFor({ timeout: 60_000 });
      await chatEntry(tablet.page, bobNick).waitFor();
      assert.equal(await tablet.page.title(), 'Messenger');

      // The same file again adds nothing.
      await file.setInputFiles(exportPath);
      await button(tablet.page, 'Import history').click();
      await tablet.page.getByText(`Imported 1,000 messages (0 new).`).waitFor({ timeout: 60_000 });
      await openChat(tablet.page, bobNick);
      await seeMessage(tablet.page, texts.at(-1)!);
      assert.equal(await tablet.page.getByRole('log').getByText(texts.at(-1)!).count(), 1);
      await tablet.close();
    })();
  });

  test('a damaged history file or one of another account gives a clear error and changes nothing', { timeout: 300_000 }, async () => {
    await scene.step(async () => {
      const fresh = await scene.device('alice fresh profile');
      await signIn(fresh.page, alice.nick, alice.password);
      await openSettings(fresh.page);
      const file = fresh.page.getByLabel('History file', { exact: true });

      const bytes = readFileSync(exportPath);
      bytes[bytes.length - 20]! ^= 0x01;
      const damaged = join(scene.server.dir, 'damaged.svch');
      writeFileSync(damaged, bytes);
      await file.setInputFiles(damaged);
      await button(fresh.page, 'Import history').click();
      await fresh.page.getByRole('alert').filter({ hasText: EXPORT_ERRORS.damaged }).waitFor();

      // A file of another account: the nick in its header is not this one.
      const other = readFileSync(exportPath);
      const mine = Buffer.from(alice.nick);
      const at = other.indexOf(mine);
      Buffer.from(carol.nick).copy(other, at);
      const otherPath = join(scene.server.dir, 'other.svch');
      writeFileSync(otherPath, other);
      await file.setInputFiles(otherPath);
      await button(fresh.page, 'Import history').click();
      await fresh.page.getByRole('alert').filter({ hasText: EXPORT_ERRORS.otherAccount }).waitFor();

      // Nothing was imported: no chat with bob, nothing to find.
      await button(fresh.page, 'Settings').click();
      assert.equal(
        await chatEntry(fresh.page, bobNick)
          .filter({ hasText: /history/ })
          .count(),
        0,
      );
      await noResults(fresh.page, texts[0]!);
      await fresh.close();
    })();
  });

  test('the database holds none of the texts afterwards', async () => {
    assert.deepEqual(plaintextFound(scene.server.dbPath, scene.typed), []);
  });
});

/** The search finds nothing for `q`. */
async function noResults(page: Page, q: string): Promise<void> {
  await page.getByRole('searchbox', { name: 'Search messages' }).fill(q);
  await page.getByText('No messages found.').waitFor();
}
