/**
 * The files the web client keeps, over the real server: a file waits for its upload sealed in
 * IndexedDB (no byte of it and not its name in the clear), so a reload or a cut network in the
 * middle of its upload only delays it, and the message goes once with the exact bytes; received
 * files kept on the device go when their message is deleted or their room left, and stay under
 * the byte budget, the oldest dropped first and downloaded again while the service has them.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import type { Page } from 'playwright-core';
import { ApiClient, atRestTag, cookieFetch, KDF_MIN, Messenger, sealAtRest } from '@svc/sdk';
import type { Device } from './harness/browser.js';
import { missingBrowser } from './harness/browser.js';
import { attachmentCount } from './harness/db.js';
import { download, sendFiles } from './harness/files.js';
import { dumpStorage } from './harness/storage.js';
import { dropAttachmentsBehindClients } from './harness/tamper.js';
import { nick, openScene, type Scene } from './harness/scene.js';
import {
  button,
  chatEntry,
  chooseAction,
  createRoom,
  leaveRoom,
  messageLog,
  openChat,
  seeMessage,
  send,
  signIn,
  signUp,
  startChat,
  statusShows,
} from './harness/ui.js';
import { until } from './harness/wait.js';

const LIMIT = 4 * 2 ** 20;

/** Waits until `pred` holds. */
const holds = (what: string, pred: () => Promise<boolean>, timeout?: number) => until(what, async () => ((await pred()) ? true : undefined), timeout);
const PARTS = '**/api/attachments/*/parts/*';

/** The names of the account database's `kv` rows that start with `prefix` (`upload.`: files waiting; `kept.`: received files). */
function kvNames(page: Page, prefix: string): Promise<string[]> {
  return page.evaluate(async (p) => {
    const done = <T>(req: IDBRequest<T>) =>
      new Promise<T>((resolve, reject) => {
        req.onsuccess = () => resolve(req.result);
        req.onerror = () => reject(req.error ?? new Error('IndexedDB request failed'));
      });
    const out: string[] = [];
    for (const info of await indexedDB.databases()) {
      if (!info.name?.startsWith('svc-')) continue;
      const db = await done(indexedDB.open(info.name));
      const keys = await done(
        db
          .transaction('kv', 'readonly')
          .objectStore('kv')
          .getAllKeys(IDBKeyRange.bound(p, `${p}\uffff`)),
      );
      out.push(...keys.map(String));
      db.close();
    }
    return out;
  }, prefix);
}

/** The id of the attachment the service received last. */
function newestAttachment(dbPath: string): string {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('SELECT id FROM attachments ORDER BY created_at DESC, rowid DESC LIMIT 1').get() as { id: string }).id;
  } finally {
    db.close();
  }
}

/** The kept files' headers (one per file; its chunks are `<header>.<n>`). */
const headers = (names: string[]): string[] => names.filter((n) => n.split('.').length === 2);

/**
 * Lets the first `n` part uploads of `page` through and holds every later one until `release`,
 * so an upload stands still part way, whatever the machine's speed, when the test cuts it.
 */
async function holdPartsAfter(page: Page, n: number): Promise<{ release: () => void }> {
  let passed = 0;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  await page.route(PARTS, async (route) => {
    if (passed++ >= n) await gate;
    await route.continue().catch(() => undefined);
  });
  return { release };
}

/** Waits until the bar "Uploading <name>" is at least `fraction` along. */
async function uploadPast(page: Page, name: string, fraction: number): Promise<void> {
  const bar = page.getByRole('progressbar', { name: `Uploading ${name}`, exact: true });
  await holds(
    `${name} ${fraction * 100} % up`,
    async () => (await bar.evaluate((el) => (el as HTMLProgressElement).value).catch(() => 0)) >= fraction,
    60_000,
  );
}

/**
 * Sends a text from `sender` and waits for it at `peer`. The outbox sends in order, so a second
 * copy of anything sent before (its upload, its message) would have reached the service and the
 * peer by then.
 */
async function nothingBehind(sender: Page, peer: Page): Promise<void> {
  const next = `typed next ${randomBytes(8).toString('hex')}`;
  await send(sender, next);
  await seeMessage(peer, next);
}

/** The rows of the open chat's log that hold `text`. */
const rowsWith = (page: Page, text: string) => messageLog(page).getByRole('listitem').filter({ hasText: text }).count();

/** What the browser's storage must not hold of `text`: the text, and its base64 at every alignment. */
function needlesOf(text: string): string[] {
  const out = [text.slice(0, 40)];
  for (const o of [0, 1, 2])
    for (const enc of ['base64', 'base64url'] as const)
      out.push(
        Buffer.from(text.slice(o, o + 60))
          .toString(enc)
          .slice(4, 40),
      );
  return out;
}

describe('web client: the files it keeps', { skip: missingBrowser() }, () => {
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

  test('a reload mid-upload finishes the upload after the reload: sent once, the exact bytes', async () => {
    await scene.step(async () => {
      const bytes = randomBytes(1_500_000);
      const caption = scene.text('sent across a reload');
      const before = attachmentCount(scene.server.dbPath);
      // 1.5 MB is 63 to 70 parts of 24,000 bytes (padded): 30 go through, the rest wait for the reload.
      const held = await holdPartsAfter(alice.page, 30);
      await sendFiles(alice.page, [{ name: 'reloaded.bin', mimeType: 'application/octet-stream', buffer: bytes }], caption);
      await uploadPast(alice.page, 'reloaded.bin', 0.3);
      assert.ok(headers(await kvNames(alice.page, 'upload.')).length === 1, 'the file waits in IndexedDB');
      await alice.page.unroute(PARTS);
      await alice.page.reload();
      held.release();
      await openChat(alice.page, bobNick);
      await statusShows(alice.page, caption, /Sent|Delivered|Read/, 60_000);
      await seeMessage(bob.page, caption);
      assert.ok((await download(bob.page, 'reloaded.bin')).equals(bytes), 'the exact bytes');
      // Once: one message on either side, one attachment at the service.
      await nothingBehind(alice.page, bob.page);
      assert.equal(await rowsWith(bob.page, caption), 1);
      assert.equal(await rowsWith(alice.page, caption), 1);
      assert.equal(attachmentCount(scene.server.dbPath), before + 1);
      assert.deepEqual(await kvNames(alice.page, 'upload.'), [], 'the waiting file is gone once uploaded');
      // The part the reload cut short.
      alice.forgiveErrors(/ERR_ABORTED|Failed to fetch|NetworkError/);
    })();
  });

  test('an upload cut by going offline finishes once the network is back; meanwhile IndexedDB holds no byte of the file nor its name', async () => {
    await scene.step(async () => {
      const text = `a letter waiting for its upload ${randomBytes(8).toString('hex')}. `.repeat(20_000);
      const bytes = Buffer.from(text);
      const name = `letter-${randomBytes(4).toString('hex')}.txt`;
      const caption = scene.text('sent across a cut');
      const before = attachmentCount(scene.server.dbPath);
      // 1 MB is 42 to 47 parts of 24,000 bytes (padded): 20 go through, the rest wait for the cut.
      const held = await holdPartsAfter(alice.page, 20);
      await sendFiles(alice.page, [{ name, mimeType: 'text/plain', buffer: bytes }], caption);
      await uploadPast(alice.page, name, 0.3);
      await alice.context.setOffline(true);
      // The held parts go on into the cut and fail there.
      const failed = alice.page.waitForEvent('requestfailed', (r) => /\/api\/attachments\/[^/]+\/parts\//.test(r.url()));
      held.release();
      await alice.page.unroute(PARTS);
      await failed;
      await statusShows(alice.page, caption, /Sending|Waiting to send/);
      // The file waits in IndexedDB, in sealed chunks: neither its bytes nor its name are there in the clear.
      const waiting = await kvNames(alice.page, 'upload.');
      assert.equal(headers(waiting).length, 1);
      assert.ok(waiting.length >= 1 + Math.ceil(bytes.length / 2 ** 20), 'a header and its 1 MiB chunks');
      const dump = JSON.stringify(await dumpStorage(alice.page));
      assert.deepEqual(
        [name, ...needlesOf(text)].filter((n) => dump.includes(n)),
        [],
        'nothing of the file or its name in the clear',
      );
      await alice.context.setOffline(false);
      await statusShows(alice.page, caption, /Sent|Delivered|Read/, 60_000);
      await seeMessage(bob.page, caption);
      assert.ok((await download(bob.page, name)).equals(bytes), 'the exact bytes');
      await nothingBehind(alice.page, bob.page);
      assert.equal(await rowsWith(bob.page, caption), 1);
      assert.equal(await rowsWith(alice.page, caption), 1);
      assert.equal(attachmentCount(scene.server.dbPath), before + 1);
      assert.deepEqual(await kvNames(alice.page, 'upload.'), []);
      alice.forgiveErrors(/ERR_INTERNET_DISCONNECTED/);
    })();
  });

  test("a deleted message's kept file is gone from IndexedDB", async () => {
    await scene.step(async () => {
      const bytes = randomBytes(1_200_000);
      const caption = scene.text('deleted later');
      await sendFiles(alice.page, [{ name: 'deleted.bin', mimeType: 'application/octet-stream', buffer: bytes }], caption);
      await seeMessage(bob.page, caption, 60_000);
      const had = headers(await kvNames(bob.page, 'kept.'));
      assert.ok((await download(bob.page, 'deleted.bin')).equals(bytes));
      const kept = headers(await kvNames(bob.page, 'kept.'));
      const added = kept.filter((k) => !had.includes(k));
      assert.equal(added.length, 1, 'the download is kept');
      assert.equal((await kvNames(bob.page, `${added[0]}.`)).length, 2, 'in two chunks');
      await chooseAction(alice.page, caption, 'Delete for everyone');
      await messageLog(bob.page).getByRole('button', { name: 'Download deleted.bin', exact: true }).waitFor({ state: 'detached' });
      await holds('the kept file removed', async () => (await kvNames(bob.page, added[0]!)).length === 0);
      assert.deepEqual(headers(await kvNames(bob.page, 'kept.')), had);
    })();
  });

  test('leaving a room takes the files kept of it', async () => {
    await scene.step(async () => {
      const room = `files ${randomBytes(3).toString('hex')}`;
      await createRoom(alice.page, room, [bobNick]);
      const hello = scene.text('room hello');
      await alice.page.getByRole('textbox', { name: 'Message', exact: true }).fill(hello);
      await button(alice.page, 'Send').click();
      await chatEntry(bob.page, room).click();
      await seeMessage(bob.page, hello, 60_000);
      const bytes = randomBytes(40_000);
      await sendFiles(alice.page, [{ name: 'room.bin', mimeType: 'application/octet-stream', buffer: bytes }]);
      const had = headers(await kvNames(bob.page, 'kept.'));
      await messageLog(bob.page).getByRole('button', { name: 'Download room.bin', exact: true }).waitFor({ timeout: 60_000 });
      assert.ok((await download(bob.page, 'room.bin')).equals(bytes));
      assert.equal(headers(await kvNames(bob.page, 'kept.')).length, had.length + 1);
      await leaveRoom(bob.page);
      await chatEntry(bob.page, room).waitFor({ state: 'detached' });
      await holds("the room's file removed", async () => headers(await kvNames(bob.page, 'kept.')).length === had.length);
      assert.deepEqual(headers(await kvNames(bob.page, 'kept.')), had);
      await openChat(alice.page, bobNick);
    })();
  });

  test('a file kept by an older version of the app, in one sealed value, still opens, and is moved into chunks', async () => {
    await scene.step(async () => {
      // Dave's keys in Node, to write the row as the older version wrote it.
      const daveNick = nick('dave');
      const password = 'dave password one';
      const origin = scene.server.origin;
      const keys = new Messenger({ api: new ApiClient({ baseUrl: origin, origin, fetch: cookieFetch() }) });
      await keys.register({ nick: daveNick, password, kdf: KDF_MIN });
      const dave = await scene.device('dave');
      await dave.page.goto('/');
      await signIn(dave.page, daveNick, password);
      await startChat(alice.page, daveNick);
      const bytes = randomBytes(300_000);
      await sendFiles(alice.page, [{ name: 'older.bin', mimeType: 'application/octet-stream', buffer: bytes }]);
      await openChat(dave.page, aliceNick);
      await messageLog(dave.page).getByRole('button', { name: 'Download older.bin', exact: true }).waitFor({ timeout: 60_000 });
      const name = `file.${await atRestTag(keys.indexKey, `file|${newestAttachment(scene.server.dbPath)}`)}`;
      const row = await sealAtRest(keys.historyKey, new Uint8Array(bytes), name);
      const account = `svc-${await atRestTag(keys.indexKey, 'db')}`;
      await dave.page.evaluate(
        async ({ account, name, row }) => {
          const db = await new Promise<IDBDatabase>((resolve, reject) => {
            const req = indexedDB.open(account);
            req.onsuccess = () => resolve(req.result);
            req.onerror = () => reject(req.error ?? new Error('IndexedDB open failed'));
          });
          const tx = db.transaction('kv', 'readwrite');
          tx.objectStore('kv').put(row, name);
          await new Promise((resolve, reject) => {
            tx.oncomplete = resolve;
            tx.onerror = () => reject(tx.error ?? new Error('IndexedDB write failed'));
          });
          db.close();
        },
        { account, name, row },
      );
      // Only the kept copy can give it now.
      await dropAttachmentsBehindClients(scene.server.dbPath);
      assert.ok((await download(dave.page, 'older.bin')).equals(bytes), 'the old row opens');
      assert.deepEqual(await kvNames(dave.page, 'file.'), [], 'the old row is gone');
      assert.equal(headers(await kvNames(dave.page, 'kept.')).length, 1, 'moved into chunks');
      await dave.page.reload();
      await openChat(dave.page, aliceNick);
      assert.ok((await download(dave.page, 'older.bin')).equals(bytes), 'the moved copy opens');
      await openChat(alice.page, bobNick);
    })();
  });

  test('kept files stay under the budget, oldest dropped first; a dropped one comes again from the service, or says "File no longer available"', async () => {
    await scene.step(async () => {
      // A device whose budget is 250 KB: two files of 100 KB fit, three do not.
      const carol = await scene.device('carol');
      await carol.context.addInitScript(() => {
        (window as { __svcKeptBytes?: number }).__svcKeptBytes = 250_000;
      });
      const carolNick = nick('carol');
      await signUp(carol.page, carolNick, 'carol password one');
      await startChat(alice.page, carolNick);
      const files = ['one', 'two', 'three'].map((n) => ({ name: `${n}.bin`, mimeType: 'application/octet-stream', buffer: randomBytes(100_000) }));
      await sendFiles(alice.page, files);
      await openChat(carol.page, aliceNick);
      for (const f of files)
        await messageLog(carol.page)
          .getByRole('button', { name: `Download ${f.name}`, exact: true })
          .waitFor({ timeout: 60_000 });
      for (const f of files) assert.ok((await download(carol.page, f.name)).equals(f.buffer));
      assert.equal(headers(await kvNames(carol.page, 'kept.')).length, 2, 'the oldest of three went');
      // one.bin is not kept any more: it comes again from the service (and two.bin, now the oldest, goes).
      assert.ok((await download(carol.page, 'one.bin')).equals(files[0]!.buffer));
      assert.equal(headers(await kvNames(carol.page, 'kept.')).length, 2);
      // The service drops them all: the kept ones still open, the dropped one is no longer available.
      await dropAttachmentsBehindClients(scene.server.dbPath);
      await carol.page.reload();
      await openChat(carol.page, aliceNick);
      assert.ok((await download(carol.page, 'three.bin')).equals(files[2]!.buffer));
      assert.ok((await download(carol.page, 'one.bin')).equals(files[0]!.buffer));
      await messageLog(carol.page).getByRole('button', { name: 'Download two.bin', exact: true }).click();
      await messageLog(carol.page)
        .getByRole('listitem')
        .filter({ hasText: 'two.bin' })
        .getByText('File no longer available', { exact: true })
        .waitFor();
      assert.equal(carol.forgiveErrors(/HTTP 404 GET \/api\/attachments\//), 1, 'the one refused download is the only error');
    })();
  });
});
