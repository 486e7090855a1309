/**
 * A stranger cannot fill the browser's storage, in the web client over the real server: a Node
 * SDK client of an account the person never chatted with sends receipts of 256 made-up ids,
 * reactions, long edits and deletions, and the app's IndexedDB keeps at most the stranger's small
 * budget of waiting actions (rows of the `pending` store). The chat goes on: a real message
 * afterwards is shown.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { makeUlid } from '@svc/protocol';
import { ApiClient, cookieFetch, KDF_MIN, MAX_PADDED_BYTES, MAX_RECEIPT_IDS, Messenger, WAITING_PER_STRANGER, type PlainInput } from '@svc/sdk';
import { missingBrowser, type Device } from './harness/browser.js';
import { queueLength } from './harness/db.js';
import { nick, openScene, type Scene } from './harness/scene.js';
import { dumpStorage } from './harness/storage.js';
import { chatEntry, openChat, seeMessage, signUp } from './harness/ui.js';
import { until } from './harness/wait.js';

const newId = (): string => makeUlid(Date.now(), (n) => new Uint8Array(randomBytes(n)));
const mid = (): string => randomBytes(16).toString('base64url');

describe('web client: a stranger cannot fill the device', { skip: missingBrowser() }, () => {
  let scene: Scene;
  const alice = { nick: nick('alice'), password: 'alice flood password' };
  const malloryNick = nick('mallory');
  let d: Device;

  before(async () => {
    scene = await openScene();
  });
  after(async () => {
    await scene?.close();
  });

  test(
    `a flood of receipts, reactions, edits and deletes for unknown ids leaves at most ${WAITING_PER_STRANGER} waiting rows in IndexedDB, and a real message afterwards is shown`,
    {
      timeout: 300_000,
    },
    async () => {
      await scene.step(async () => {
        d = await scene.device('alice');
        await signUp(d.page, alice.nick, alice.password);
        const mallory = new Messenger({ api: new ApiClient({ baseUrl: scene.server.origin, origin: scene.server.origin, fetch: cookieFetch() }) });
        await mallory.register({ nick: malloryNick, password: 'mallory flood password', kdf: KDF_MIN });
        await mallory.ensureDevice('mallory-node-1');

        const now = mallory.api.now();
        const flood: PlainInput[] = [];
        for (let i = 0; i < 20; i++) {
          flood.push({ type: 'receipt', ids: Array.from({ length: MAX_RECEIPT_IDS }, newId), status: 'read', sentAt: now, mid: mid() });
          flood.push({ type: 'reaction', target: newId(), emoji: '😈', op: 'add', sentAt: now, mid: mid() });
          flood.push({ type: 'edit', target: newId(), body: 'x'.repeat(MAX_PADDED_BYTES - 600), sentAt: now, mid: mid() });
          flood.push({ type: 'delete', target: newId(), sentAt: now, mid: mid() });
        }
        for (let i = 0; i < flood.length; i += 10) await Promise.all(flood.slice(i, i + 10).map((p) => mallory.send(`dm:${alice.nick}`, p)));
        const deviceId = d.deviceIds.at(-1)!;
        // Stored: the device's queue is empty once every envelope is acknowledged.
        await until('every envelope to be taken', () => (queueLength(scene.server.dbPath, deviceId) === 0 ? true : undefined), 120_000);

        const dump = await dumpStorage(d.page);
        const account = dump.databases.find((x) => x.name.startsWith('svc-'))!;
        const pending = account.stores.find((x) => x.name === 'pending')!;
        assert.ok(pending.rows.length <= WAITING_PER_STRANGER, `${pending.rows.length} waiting rows`);

        const text = scene.text('hello after the flood');
        await mallory.sendDm(alice.nick, text);
        await chatEntry(d.page, malloryNick).waitFor();
        await openChat(d.page, malloryNick);
        await seeMessage(d.page, text);
      })();
    },
  );
});
