/**
 * Files in the web client, over the real server: a file attached with the paperclip, dropped onto
 * the chat or pasted goes with its caption and comes out byte for byte on the other side; one over
 * the service's limit is refused before anything is sent; an attachment can be removed before
 * sending; a file the service no longer has says so.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Device } from './harness/browser.js';
import { missingBrowser } from './harness/browser.js';
import { attachmentCount, plaintextFound } from './harness/db.js';
import { attachInput, download, dropFiles, pasteFiles, sendFiles } from './harness/files.js';
import { dumpStorage } from './harness/storage.js';
import { dropAttachmentsBehindClients } from './harness/tamper.js';
import { nick, openScene, type Scene } from './harness/scene.js';
import { button, messageLog, openChat, seeMessage, signUp, startChat, statusShows } from './harness/ui.js';

const LIMIT = 2 * 2 ** 20;

describe('web client: files', { skip: missingBrowser() }, () => {
  let scene: Scene;
  let alice: Device;
  let bob: Device;
  const aliceNick = nick('alice');
  const bobNick = nick('bob');

  before(async () => {
    scene = await openScene({ env: { ATTACHMENT_MAX_BYTES: String(LIMIT) } });
    alice = await scene.device('alice');
    bob = await scene.device('bob');
    await Promise.all([signUp(alice.page, aliceNick, 'alice password one'), signUp(bob.page, bobNick, 'bob password one')]);
    await startChat(alice.page, bobNick);
    await alice.page.getByRole('textbox', { name: 'Message', exact: true }).fill('hello');
    await button(alice.page, 'Send').click();
    await openChat(bob.page, aliceNick);
    await seeMessage(bob.page, 'hello');
  });
  after(async () => {
    await scene?.close();
  });

  test('a file sent in a DM is downloaded byte for byte by the other side, with its caption', async () => {
    await scene.step(async () => {
      const bytes = randomBytes(150_000);
      const caption = scene.text('the quarterly report');
      await sendFiles(alice.page, [{ name: 'report.bin', mimeType: 'application/octet-stream', buffer: bytes }], caption);
      await statusShows(alice.page, caption, /Sent|Delivered|Read/, 60_000);
      await seeMessage(bob.page, caption);
      const item = messageLog(bob.page).getByRole('listitem').filter({ hasText: caption });
      await item.getByText('report.bin', { exact: true }).waitFor();
      await item.getByText('150.0 KB', { exact: true }).waitFor();
      const got = await download(bob.page, 'report.bin');
      assert.equal(got.length, bytes.length);
      assert.ok(got.equals(bytes), 'the downloaded bytes are the sent ones');
    })();
  });

  test('an attachment removed before sending is not sent', async () => {
    await scene.step(async () => {
      await attachInput(alice.page).setInputFiles({ name: 'wrong.txt', mimeType: 'text/plain', buffer: Buffer.from('not this one') });
      const list = alice.page.getByRole('list', { name: 'Attachments' });
      await list.getByText('wrong.txt').waitFor();
      await list.getByRole('button', { name: 'Remove attachment', exact: true }).click();
      await list.waitFor({ state: 'hidden' });
      // Nothing attached and no text: Send does nothing.
      await button(alice.page, 'Send').click();
      const caption = scene.text('after the removal');
      await alice.page.getByRole('textbox', { name: 'Message', exact: true }).fill(caption);
      await button(alice.page, 'Send').click();
      await seeMessage(bob.page, caption);
      assert.equal(await messageLog(bob.page).getByText('wrong.txt').count(), 0);
      assert.equal(await messageLog(alice.page).getByText('wrong.txt').count(), 0);
    })();
  });

  test('a file over the limit is refused before upload, with its name and the limit', async () => {
    await scene.step(async () => {
      const before = attachmentCount(scene.server.dbPath);
      await sendFiles(alice.page, [{ name: 'huge.bin', mimeType: 'application/octet-stream', buffer: Buffer.alloc(LIMIT + 1, 7) }]);
      await alice.page.getByText('huge.bin is too large (limit 2 MB)', { exact: true }).waitFor();
      assert.equal(await messageLog(alice.page).getByText('huge.bin').count(), 0, 'no message was made');
      assert.equal(attachmentCount(scene.server.dbPath), before, 'nothing was uploaded');
    })();
  });

  test('a file over 1 MB shows its download progress, and arrives whole', async () => {
    await scene.step(async () => {
      const bytes = randomBytes(1_500_000);
      await sendFiles(alice.page, [{ name: 'big.bin', mimeType: 'application/octet-stream', buffer: bytes }]);
      await messageLog(bob.page).getByRole('button', { name: 'Download big.bin', exact: true }).waitFor({ timeout: 60_000 });
      // The bar shows at the click; the bytes are held back until it has been seen, so it is seen
      // on a machine that downloads 1.5 MB at once.
      let barSeen!: () => void;
      const held = new Promise<void>((r) => (barSeen = r));
      await bob.page.route('**/api/attachments/*', async (route) => {
        const res = await route.fetch();
        await held;
        await route.fulfill({ response: res });
      });
      const [got] = await Promise.all([
        download(bob.page, 'big.bin'),
        bob.page
          .getByRole('progressbar', { name: 'Downloading big.bin', exact: true })
          .waitFor({ timeout: 10_000 })
          .finally(() => barSeen()),
      ]);
      assert.ok(got.equals(bytes));
      await bob.page.unroute('**/api/attachments/*');
      await bob.page.getByRole('progressbar', { name: 'Downloading big.bin', exact: true }).waitFor({ state: 'detached' });
    })();
  });

  test('a pasted image and a dropped file are attached and sent', async () => {
    await scene.step(async () => {
      const png = randomBytes(3_000);
      await pasteFiles(alice.page, [{ name: 'image.png', mimeType: 'image/png', buffer: png }]);
      const list = alice.page.getByRole('list', { name: 'Attachments' });
      await list.getByText(/^pasted-.*\.png$/).waitFor();
      const dropped = randomBytes(5_000);
      await dropFiles(alice.page, [{ name: 'dropped.dat', mimeType: 'application/octet-stream', buffer: dropped }]);
      await list.getByText('dropped.dat').waitFor();
      await button(alice.page, 'Send').click();
      await messageLog(bob.page).getByRole('button', { name: 'Download dropped.dat', exact: true }).waitFor({ timeout: 60_000 });
      const pastedName =
        (await messageLog(bob.page)
          .getByText(/^pasted-.*\.png$/)
          .first()
          .textContent()) ?? '';
      assert.ok((await download(bob.page, pastedName)).equals(png));
      assert.ok((await download(bob.page, 'dropped.dat')).equals(dropped));
    })();
  });

  test('an upload cut by going offline finishes once the network is back, with a progress bar meanwhile', async () => {
    await scene.step(async () => {
      const bytes = randomBytes(1_200_000);
      const caption = scene.text('sent across a cut');
      await sendFiles(alice.page, [{ name: 'across.bin', mimeType: 'application/octet-stream', buffer: bytes }], caption);
      await alice.page.getByRole('progressbar', { name: 'Uploading across.bin', exact: true }).waitFor();
      // The next part goes into the cut and fails there.
      const failed = alice.page.waitForEvent('requestfailed', (r) => /\/api\/attachments\/[^/]+\/parts\//.test(r.url()));
      await alice.context.setOffline(true);
      await failed;
      await statusShows(alice.page, caption, /Sending|Waiting to send/);
      await alice.context.setOffline(false);
      await statusShows(alice.page, caption, /Sent|Delivered|Read/, 60_000);
      await alice.page.getByRole('progressbar', { name: 'Uploading across.bin', exact: true }).waitFor({ state: 'detached' });
      await seeMessage(bob.page, caption);
      assert.ok((await download(bob.page, 'across.bin')).equals(bytes));
      // What failed while offline is the cut itself.
      alice.forgiveErrors(/ERR_INTERNET_DISCONNECTED/);
    })();
  });

  test('a file downloaded once stays in the history after the service dropped it, across a reload', async () => {
    await scene.step(async () => {
      const text = 'a kept file, readable on this device only. '.repeat(200);
      const bytes = Buffer.from(text);
      await sendFiles(alice.page, [{ name: 'keep.bin', mimeType: 'application/octet-stream', buffer: bytes }]);
      await messageLog(bob.page).getByRole('button', { name: 'Download keep.bin', exact: true }).waitFor({ timeout: 60_000 });
      assert.ok((await download(bob.page, 'keep.bin')).equals(bytes));
      await dropAttachmentsBehindClients(scene.server.dbPath);
      await bob.page.reload();
      await openChat(bob.page, aliceNick);
      assert.ok((await download(bob.page, 'keep.bin')).equals(bytes), 'the kept copy, byte for byte');
      // Sealed: neither the text nor its base64 at any alignment is in the browser's store.
      const needles = [text.slice(0, 40)];
      for (const o of [0, 1, 2])
        for (const enc of ['base64', 'base64url'] as const)
          needles.push(
            Buffer.from(text.slice(o, o + 60))
              .toString(enc)
              .slice(4, 40),
          );
      const dump = JSON.stringify(await dumpStorage(bob.page));
      assert.deepEqual(
        needles.filter((n) => dump.includes(n)),
        [],
        'the kept file is sealed',
      );
    })();
  });

  test('a file the service no longer has says "File no longer available"', async () => {
    await scene.step(async () => {
      await sendFiles(alice.page, [{ name: 'old.txt', mimeType: 'text/plain', buffer: Buffer.from('kept too long') }]);
      const btn = messageLog(bob.page).getByRole('button', { name: 'Download old.txt', exact: true });
      await btn.waitFor({ timeout: 60_000 });
      await dropAttachmentsBehindClients(scene.server.dbPath);
      await btn.click();
      await messageLog(bob.page)
        .getByRole('listitem')
        .filter({ hasText: 'old.txt' })
        .getByText('File no longer available', { exact: true })
        .waitFor();
      assert.equal(bob.forgiveErrors(/HTTP 404 GET \/api\/attachments\//), 1, 'the one refused download is the only error');
    })();
  });

  test('the service keeps no byte of a file, nor its name or caption, in any table, index or log of its database', async () => {
    await scene.step(async () => {
      const marker = `file content marker ${randomBytes(8).toString('hex')} `;
      const content = Buffer.from(marker.repeat(2_000));
      const name = `${scene.text('plans for the garden').replace(/\s+/g, '-')}.txt`;
      const caption = scene.text('where the roses go');
      await sendFiles(alice.page, [{ name, mimeType: 'text/plain', buffer: content }], caption);
      await statusShows(alice.page, caption, /Sent|Delivered|Read/, 60_000);
      await seeMessage(bob.page, caption);
      const got = await download(bob.page, name);
      assert.ok(got.equals(content), 'the file arrived, so its parts were stored');
      // The parts travel as base64url: look for the content in that form too, at its three alignments.
      const b64 = [0, 1, 2].map((o) =>
        content
          .subarray(o, o + 300)
          .toString('base64url')
          .slice(4, 200),
      );
      assert.deepEqual(plaintextFound(scene.server.dbPath, [aliceNick]), [aliceNick], 'the scan reads the right file: it finds open metadata');
      assert.deepEqual(plaintextFound(scene.server.dbPath, [marker, name, caption, 'report.bin', 'old.txt', ...b64, ...scene.typed]), []);
    })();
  });
});
