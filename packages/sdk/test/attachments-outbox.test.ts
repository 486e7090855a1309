/**
 * Files through the outbox of the conversation layer, against a real service: a message with a
 * file survives going offline and a reload and is sent once; "Delete for everyone" deletes the
 * upload too; a room photo reaches every member from one stored copy; and the service's database
 * holds no byte of the file, its name or its caption.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, existsSync } from 'node:fs';
import type { Envelope } from '@svc/protocol';
import { Conversations, downloadBytes, isSdkError, MemoryFiles, MemoryStore, type ChatMessage, type FetchLike } from '../src/index.js';
import { register, reload, sleep, startServer, type Device, type TestServer } from './server.js';

let server: TestServer;
before(async () => {
  server = await startServer({}, {}, 'sqlite');
});
after(async () => {
  await server.close();
});

async function until(pred: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** A fetch that fails every request while `offline` is set, as a device without network. */
function switchable() {
  const net = { offline: false };
  const wrap =
    (f: FetchLike): FetchLike =>
    async (url, init) => {
      if (net.offline) throw new TypeError('fetch failed');
      return f(url, init);
    };
  return { net, wrap };
}

interface App {
  d: Device;
  conv: Conversations;
  store: MemoryStore;
  files: MemoryFiles;
  envs: Envelope[];
  close(): Promise<void>;
}

/** A device as an app runs it: its conversations fed by its event stream. */
async function run(d: Device, store = new MemoryStore(), files = new MemoryFiles()): Promise<App> {
  const conv = new Conversations({ messenger: d.m, store, files, warnAfterMs: 0 });
  const envs: Envelope[] = [];
  let ready = 0;
  const stream = d.m.events({
    onMsg: async (env) => {
      envs.push(env);
      await conv.receive(env);
    },
    onReady: () => void ready++,
    backoffMs: { initial: 50, max: 200 },
  });
  stream.start();
  await until(() => ready > 0, 'ready');
  await conv.load();
  return {
    d,
    conv,
    store,
    files,
    envs,
    async close() {
      conv.stop();
      await stream.close();
    },
  };
}

const withFile = async (a: App): Promise<ChatMessage[]> => (await a.store.all()).filter((m) => m.attachment);
const storedCount = async (id: string): Promise<number> => (await server.query(`SELECT id FROM attachments WHERE id = '${id}'`)).length;

test('a message with a file sent offline survives a reload and is sent once, when the network is back', async () => {
  const sw = switchable();
  const alice = await register(server, undefined, undefined, { wrap: sw.wrap });
  const B = await run(await register(server));
  const store = new MemoryStore();
  const files = new MemoryFiles();
  const A = await run(alice, store, files);
  const file = new Uint8Array(randomBytes(150_000));
  try {
    sw.net.offline = true;
    const rec = await A.conv.sendFile(`dm:${B.d.m.nick}`, { file, name: 'trip plan.pdf', mime: 'application/pdf', caption: 'for Sunday' });
    assert.equal(rec.state, 'queued');
    assert.equal(rec.body, 'for Sunday');
    assert.equal(files.size, 1, 'the file is kept until its upload has finished');
    await sleep(300);
    assert.equal(A.conv.outbox.pending.length, 1);
    assert.equal(A.conv.outbox.pending[0]!.uploading, true);
    const state = alice.m.exportSession();
    await A.close();

    // The page reloads: a new Messenger on the same stored state, same cookies; the network is back.
    sw.net.offline = false;
    const again = await reload(server, alice, state, { wrap: sw.wrap });
    const A2 = await run(again, store, files);
    try {
      await until(async () => (await store.get(rec.id))?.state === 'sent', 'sent after the reload');
      await until(async () => (await withFile(B)).length === 1, 'delivered');
      await sleep(300);
      assert.equal(B.envs.length, 1, 'sent once');
      assert.equal(files.size, 0, 'the kept file went once uploaded');
      assert.deepEqual(A2.conv.outbox.pending, []);
      const [got] = await withFile(B);
      assert.equal(got?.attachment?.name, 'trip plan.pdf');
      assert.equal(got?.body, 'for Sunday');
      const mine = await store.get(rec.id);
      assert.equal(mine?.attachment?.sha256, got?.attachment?.sha256, "the sender's record has the hash it sent");
      assert.equal(await storedCount(got.attachment.id), 1);
      assert.ok(Buffer.from(await downloadBytes(B.d.api, got.attachment)).equals(Buffer.from(file)));
    } finally {
      await A2.close();
    }
  } finally {
    await B.close();
  }
});

test('"Delete for everyone" deletes the upload too, sent or not yet sent', async () => {
  const sw = switchable();
  const A = await run(await register(server, undefined, undefined, { wrap: sw.wrap }));
  const B = await run(await register(server));
  try {
    const rec = await A.conv.sendFile(`dm:${B.d.m.nick}`, { file: new Uint8Array(randomBytes(30_000)), name: 'a.bin' });
    await until(async () => (await withFile(B)).length === 1, 'delivered');
    const [got] = await withFile(B);
    const ref = got!.attachment!;
    await A.conv.deleteForEveryone((await A.store.get(rec.id))!);
    await until(async () => (await storedCount(ref.id)) === 0, 'the upload deleted');
    await until(async () => (await B.store.get(got!.id))?.deleted === true, 'deleted on the receiver');
    assert.equal((await B.store.get(got!.id))?.attachment, undefined, 'the receiver forgets the key');
    await assert.rejects(
      downloadBytes(B.d.api, ref),
      (e: unknown) => isSdkError(e, 'unknown_attachment') && e.message === 'File no longer available.',
    );

    // Not sent yet (offline): it never leaves the device, and nothing stays on the service.
    await until(() => A.conv.outbox.pending.length === 0, 'the deletion sent');
    sw.net.offline = true;
    const queued = await A.conv.sendFile(`dm:${B.d.m.nick}`, { file: new Uint8Array(10), name: 'b.bin' });
    await A.conv.deleteForEveryone(queued);
    assert.deepEqual(A.conv.outbox.pending, []);
    assert.equal(A.files.size, 0);
    sw.net.offline = false;
    A.conv.online();
    await until(
      async () =>
        (await A.store.getMeta('attachment-deletes')) === undefined || ((await A.store.getMeta('attachment-deletes')) as string[]).length === 0,
      'deletes done',
    );
    await sleep(300);
    assert.equal(B.envs.length, 2, 'only the first message and its deletion reached the peer');
    assert.equal(await storedCount(queued.attachment!.id), 0);
  } finally {
    await A.close();
    await B.close();
  }
});

test('a room photo reaches three members, who all download the one stored copy; the database holds no byte of it, its name or caption', async () => {
  const apps = await Promise.all([0, 1, 2, 3].map(async () => run(await register(server))));
  const [A, ...members] = apps as [App, App, App, App];
  const marker = `photo-bytes-${randomBytes(6).toString('hex')}`;
  const file = new Uint8Array(Buffer.from(marker.repeat(3000)));
  const name = `garden-${randomBytes(4).toString('hex')}.jpg`;
  const caption = `roses by the shed ${randomBytes(4).toString('hex')}`;
  const thumb = 'data:image/jpeg;base64,' + Buffer.alloc(900, 3).toString('base64');
  try {
    const room = await A.d.m.createRoom(
      'Garden',
      members.map((m) => m.d.m.nick),
    );
    await until(() => members.every((m) => m.d.m.room(room.id) !== undefined), 'everyone in the room');
    await A.conv.sendFile(`room:${room.id}`, { file, name, mime: 'image/jpeg', caption, photo: { width: 640, height: 480, thumb } });
    for (const m of members) await until(async () => (await withFile(m)).length === 1, `${m.d.m.nick} has the photo`);
    const ids = new Set<string>();
    for (const m of members) {
      const [rec] = await withFile(m);
      assert.equal(rec!.attachment!.type, 'photo');
      assert.equal(rec!.attachment!.thumb, thumb, 'the thumbnail came inside the message');
      ids.add(rec!.attachment!.id);
      assert.ok(Buffer.from(await downloadBytes(m.d.api, rec!.attachment!)).equals(Buffer.from(file)), `${m.d.m.nick} got the photo`);
    }
    assert.equal(ids.size, 1, 'one id for every member');
    const rows = await server.query(`SELECT id FROM attachments WHERE uploader = '${A.d.m.nick}'`);
    assert.equal(rows.length, 1, 'stored once');

    const db = [server.dbPath, `${server.dbPath}-wal`].filter(existsSync).map((f) => readFileSync(f));
    for (const secret of [marker, name, caption]) {
      for (const form of [secret, Buffer.from(secret).toString('base64url'), Buffer.from(secret).toString('hex')])
        assert.ok(!db.some((b) => b.includes(Buffer.from(form))), `"${secret}" is in the database as ${form === secret ? 'text' : form}`);
    }
  } finally {
    for (const a of apps) await a.close();
  }
});
