/**
 * Photos in the web client, over the real server: a photo leaves the device re-encoded, without its
 * Exif (GPS position included) and no longer than 2,048 px; the other side sees it at once from
 * its thumbnail, then in full, opens it in the dialog "Photo" by click or Enter, and downloads it;
 * in a DM and in a room.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import type { Device } from './harness/browser.js';
import { missingBrowser } from './harness/browser.js';
import { allViolations } from './harness/axe.js';
import { sendFiles } from './harness/files.js';
import { drawnJpeg, GPS_SECRET, jpegSegments, withGpsExif } from './harness/jpeg.js';
import { nick, openScene, type Scene } from './harness/scene.js';
import { chatEntry, createRoom, messageLog, openChat, seeMessage, signUp, startChat } from './harness/ui.js';

function photo(page: Page, name: string) {
  return messageLog(page).getByRole('img', { name, exact: true }).first();
}

/** Opens the photo's dialog, downloads the photo from there and closes the dialog. */
async function downloadFromDialog(page: Page, name: string, how: 'click' | 'Enter'): Promise<Buffer> {
  if (how === 'click') await photo(page, name).click();
  else {
    await photo(page, name).focus();
    await page.keyboard.press('Enter');
  }
  const dialog = page.getByRole('dialog', { name: 'Photo', exact: true });
  await dialog.getByRole('img', { name, exact: true }).waitFor();
  const [d] = await Promise.all([page.waitForEvent('download'), dialog.getByRole('button', { name: 'Download', exact: true }).click()]);
  const path = await d.path();
  await dialog.getByRole('button', { name: 'Close', exact: true }).click();
  await dialog.waitFor({ state: 'detached' });
  const { readFile } = await import('node:fs/promises');
  return readFile(path);
}

describe('web client: photos', { skip: missingBrowser() }, () => {
  let scene: Scene;
  let alice: Device;
  let bob: Device;
  const aliceNick = nick('alice');
  const bobNick = nick('bob');

  before(async () => {
    scene = await openScene();
    alice = await scene.device('alice');
    bob = await scene.device('bob');
    await Promise.all([signUp(alice.page, aliceNick, 'alice password one'), signUp(bob.page, bobNick, 'bob password one')]);
  });
  after(async () => {
    await scene?.close();
  });

  test('a photo in a DM loses its Exif and GPS, is scaled to 2048 px, and shows thumbnail, full image and dialog', async () => {
    await scene.step(async () => {
      await startChat(alice.page, bobNick);
      const original = withGpsExif(await drawnJpeg(alice.page, 3000, 1000));
      assert.ok(original.includes(GPS_SECRET) && jpegSegments(original).markers.includes(0xe1), 'the test photo carries Exif with GPS');
      const caption = scene.text('a view from the hill');
      await sendFiles(alice.page, [{ name: 'hill.jpg', mimeType: 'image/jpeg', buffer: original }], caption);
      // The full photo is held back until the thumbnail has been seen, so it is seen first on any machine.
      let thumbnailSeen!: () => void;
      const held = new Promise<void>((r) => (thumbnailSeen = r));
      await bob.page.route('**/api/attachments/*', async (route) => {
        const res = await route.fetch();
        await held;
        await route.fulfill({ response: res });
      });
      await chatEntry(bob.page, aliceNick).waitFor();
      await openChat(bob.page, aliceNick);
      await seeMessage(bob.page, caption);
      const img = photo(bob.page, 'hill.jpg');
      await img.waitFor();
      // The thumbnail first (a small JPEG inside the message), then the full photo.
      const first = (await img.getAttribute('src')) ?? '';
      assert.match(first, /^data:image\/jpeg;base64,/);
      assert.ok(first.length <= 32 + Math.ceil(4096 / 3) * 4, `the thumbnail is at most 4 KB (${first.length} characters)`);
      thumbnailSeen();
      await bob.page
        .waitForFunction(
          ([name, thumb]) => Array.from(document.querySelectorAll('img')).some((i) => i.alt === name && i.src !== thumb && i.naturalWidth === 2048),
          ['hill.jpg', first] as const,
        )
        .catch(async (e: unknown) => {
          const seen = await bob.page.evaluate(() =>
            Array.from(document.querySelectorAll('img')).map((i) => `${i.alt} ${i.src.length} ${i.naturalWidth}`),
          );
          throw new Error(`the full photo did not show: ${JSON.stringify(seen)}`, { cause: e });
        });
      await bob.page.unroute('**/api/attachments/*');
      const got = await downloadFromDialog(bob.page, 'hill.jpg', 'click');
      const seg = jpegSegments(got);
      assert.deepEqual([seg.width, seg.height], [2048, 683], 'the long side is scaled to 2048 px');
      assert.ok(!seg.markers.includes(0xe1), 'no APP1 segment');
      assert.ok(!got.includes('Exif'), 'no Exif');
      assert.ok(!got.includes(GPS_SECRET), 'no GPS bytes');
    })();
  });

  test('a photo in a room shows its thumbnail, opens with Enter, and downloads', async () => {
    await scene.step(async () => {
      const room = `photos ${aliceNick.slice(-6)}`;
      await createRoom(alice.page, room, [bobNick]);
      await chatEntry(bob.page, room).waitFor({ timeout: 30_000 });
      await openChat(bob.page, room);
      const picture = await drawnJpeg(alice.page, 640, 480);
      await sendFiles(alice.page, [{ name: 'room.jpg', mimeType: 'image/jpeg', buffer: picture }]);
      const img = photo(bob.page, 'room.jpg');
      await img.waitFor({ timeout: 30_000 });
      assert.match((await img.getAttribute('src')) ?? '', /^data:image\/jpeg;base64,/);
      const got = await downloadFromDialog(bob.page, 'room.jpg', 'Enter');
      const seg = jpegSegments(got);
      assert.deepEqual([seg.width, seg.height], [640, 480]);
      assert.ok(!seg.markers.includes(0xe1), 'no APP1 segment');
    })();
  });

  test('a chat with a file and a photo, its composer with an attachment and the photo dialog have no accessibility violations', async () => {
    await scene.step(async () => {
      await sendFiles(alice.page, [{ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('some notes') }]);
      await messageLog(bob.page).getByRole('button', { name: 'Download notes.txt', exact: true }).waitFor({ timeout: 30_000 });
      await bob.page
        .getByLabel('Attach file', { exact: true })
        .setInputFiles({ name: 'draft.txt', mimeType: 'text/plain', buffer: Buffer.from('draft') });
      await bob.page.getByRole('button', { name: 'Remove attachment', exact: true }).waitFor();
      assert.deepEqual(await allViolations(bob.page), []);
      // The keyboard reaches the file input: Shift+Tab from the textbox lands on it.
      await bob.page.getByRole('textbox', { name: 'Message', exact: true }).focus();
      await bob.page.keyboard.press('Shift+Tab');
      assert.equal(await bob.page.evaluate(() => document.activeElement?.getAttribute('aria-label')), 'Attach file');
      await bob.page.getByRole('button', { name: 'Remove attachment', exact: true }).click();
      await photo(bob.page, 'room.jpg').click();
      await bob.page.getByRole('dialog', { name: 'Photo', exact: true }).waitFor();
      assert.deepEqual(await allViolations(bob.page), []);
      await bob.page.keyboard.press('Escape');
      await bob.page.getByRole('dialog', { name: 'Photo', exact: true }).waitFor({ state: 'detached' });
    })();
  });
});
