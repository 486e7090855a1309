/**
 * The history transfer as an archive in the attachment store (conversation/transfer-archive.ts)
 * over a real service whose largest file is small, so that the archive takes several attachments
 * and a file runs on from one into the next: the files kept on the old device arrive on the new
 * one byte for byte; a history-archive message that is forged or comes again is refused; an
 * attachment the service alters is refused with a clear error and imports nothing; and a device
 * of an older version, which asks without taking archives, gets the history as paced chunks.
 */
import assert from 'node:assert/strict';
import { randomBytes as nodeRandomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { makeUlid } from '@svc/protocol';
import {
  attachTransfer,
  cipherSize,
  Conversations,
  HistoryTransfer,
  MemoryFiles,
  MemoryStore,
  messengerLink,
  randomBytes,
  type ChatMessage,
  type FetchLike,
  type HistoryArchivePlain,
  type PlainInput,
  type TransferEvent,
  type TransferProgress,
} from '../src/index.js';
import { fill, makeHistory } from './history-fixtures.js';
import { loginDevice, register, sleep, startServer, type Device, type TestServer } from './server.js';

const b64 = (b: Uint8Array): string => Buffer.from(b).toString('base64url');

/** The largest file the service takes: 256 KiB of ciphertext, so a 600 KB file spans three attachments. */
const MAX_BYTES = 256 * 1024;

let server: TestServer;
before(async () => {
  server = await startServer({ ATTACHMENT_MAX_BYTES: String(MAX_BYTES) });
});
after(async () => {
  await server.close();
});

async function until(pred: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

interface App {
  conv: Conversations;
  transfer: HistoryTransfer;
  store: MemoryStore;
  kept: MemoryFiles;
  events: TransferEvent[];
  took: PlainInput[];
  close(): Promise<void>;
}

/** A device as the app runs it, with the files it keeps; `old` runs it as a device of an older version (no archives). */
async function run(d: Device, o: { store?: MemoryStore; kept?: MemoryFiles; old?: boolean } = {}): Promise<App> {
  const store = o.store ?? new MemoryStore();
  const kept = o.kept ?? new MemoryFiles();
  const conv = new Conversations({ messenger: d.m, store });
  let transfer: HistoryTransfer;
  if (o.old) {
    transfer = new HistoryTransfer(messengerLink(d.m, conv, d.deviceId));
    conv.handleHistory((x) => transfer.handle(x));
    conv.onSent((item) => transfer.sent(item));
  } else transfer = attachTransfer(d.m, conv, d.deviceId, { kept });
  const events: TransferEvent[] = [];
  transfer.on((e) => events.push(e));
  const took: PlainInput[] = [];
  let ready = 0;
  const stream = d.m.events({
    onMsg: async (env) => {
      const opened = await d.m.decryptEnvelope(env);
      await conv.take(opened);
      if (opened.ok && opened.plain.type.startsWith('history-')) took.push(opened.plain as PlainInput);
    },
    onReady: () => void ready++,
    backoffMs: { initial: 50, max: 200 },
  });
  stream.start();
  await until(() => ready > 0, 'ready', 10_000);
  await conv.load();
  await transfer.load();
  return {
    conv,
    transfer,
    store,
    kept,
    events,
    took,
    async close() {
      conv.stop();
      await stream.close();
    },
  };
}

const progress = (a: App, role: TransferProgress['role']): TransferProgress | undefined => a.transfer.progress().find((p) => p.role === role);
const finished = (a: App, role: TransferProgress['role']) => () => progress(a, role)?.state === 'done';
const refusals = (a: App): string[] => a.events.flatMap((e) => (e.type === 'refused' ? [`${e.kind}:${e.why}`] : []));

/** A record of a file message whose attachment `id` holds `plainSize` bytes. */
function fileRecord(me: string, id: string, plainSize: number, name: string): ChatMessage {
  const ts = Date.now();
  return {
    id: makeUlid(ts, randomBytes),
    chat: 'dm:carol',
    ts,
    from: 'carol',
    sentAt: ts,
    kind: 'text',
    body: `here is ${name}`,
    reported: 'read',
    attachment: {
      type: 'file',
      id,
      key: b64(randomBytes(32)),
      sha256: b64(randomBytes(32)),
      size: cipherSize(plainSize),
      plainSize,
      name,
      mime: 'application/pdf',
    },
  };
}

/** An account with `n` records and `files` (bytes by size) kept on its first device, and a second device. */
async function account(n: number, sizes: number[] = [], o: { wrapSecond?: (f: FetchLike) => FetchLike } = {}) {
  const first = await register(server);
  const store = new MemoryStore();
  const kept = new MemoryFiles();
  const history = makeHistory(n, first.m.nick);
  const files = new Map<string, Uint8Array>();
  for (const [i, size] of sizes.entries()) {
    const id = b64(randomBytes(16));
    const bytes = new Uint8Array(nodeRandomBytes(size));
    files.set(id, bytes);
    await kept.put(id, bytes);
    history.push(fileRecord(first.m.nick, id, size, `report-${i}.pdf`));
  }
  // A file kept here that no message of the history names stays here.
  await kept.put(b64(randomBytes(16)), randomBytes(100));
  await fill(store, history);
  const second = await loginDevice(server, first.m.nick, first.password, `dev-${first.m.nick}-2`, o.wrapSecond ? { wrap: o.wrapSecond } : {});
  return { first, second, store, kept, history, files };
}

async function ask(old: App, neu: App, device: string): Promise<void> {
  await neu.transfer.request();
  await until(() => old.transfer.requests.some((r) => r.device === device), 'the request on the old device', 20_000);
  await old.transfer.send(device);
}

test('the files kept on the old device arrive on the new one byte for byte, with the history, across several attachments', async () => {
  const { first, second, store, kept, history, files } = await account(3000, [600_000, 5, 70_000]);
  const old = await run(first, { store, kept });
  const neu = await run(second);
  try {
    await ask(old, neu, second.deviceId);
    await until(finished(neu, 'receive'), 'the transfer to end');
    assert.deepEqual(refusals(neu), []);
    assert.deepEqual(await neu.store.all(), await store.all(), 'the same history');
    assert.equal((await neu.store.all()).length, history.length);
    assert.deepEqual((await neu.kept.list()).sort(), [...files.keys()].sort(), 'the files its messages name, no other');
    for (const [id, bytes] of files) assert.deepEqual(await neu.kept.get(id), bytes, `file ${id} byte for byte`);
    assert.deepEqual(progress(neu, 'receive')!.files, { done: 3, total: 3 });
    const archive = neu.took.find((p): p is Omit<HistoryArchivePlain, 'v'> => p.type === 'history-archive')!;
    assert.ok(archive.parts.length >= 3, `several attachments (${archive.parts.length})`);
    assert.ok(
      archive.parts.every((p) => p.size <= MAX_BYTES),
      'each within the service limit',
    );
    assert.deepEqual(
      neu.took.map((p) => p.type),
      ['history-archive'],
      'one message carries the whole transfer',
    );
    // Once the new device holds it, the old one deletes the archive from the service.
    await until(finished(old, 'send'), 'the sender to hear the end');
    for (const p of archive.parts) {
      let gone = false;
      for (let i = 0; i < 100 && !gone; i++) {
        gone =
          (await first.m.api.downloadAttachment(p.id).then(
            async (r) => void (await r.body?.cancel()),
            () => true,
          )) === true;
        if (!gone) await sleep(20);
      }
      assert.ok(gone, `attachment ${p.id} deleted`);
    }
  } finally {
    await Promise.all([old.close(), neu.close()]);
  }
});

test('a forged history-archive message is refused and imports nothing; the same message again is a replay', async () => {
  const { first, second, store, kept } = await account(300, [1000]);
  const old = await run(first, { store, kept });
  const neu = await run(second);
  try {
    await ask(old, neu, second.deviceId);
    await until(finished(neu, 'receive'), 'the transfer to end');
    // The messages below go through the old device's outbox. Once that device hears the end of the
    // transfer, it takes whatever of the transfer still waits there back out (onAck), which would
    // take two of the three with it: it hears the end first.
    await until(finished(old, 'send'), 'the sender to hear the end');
    // Sent again under a new mid (the same mid would be dropped as a copy before the transfer sees it).
    const { mid: _mid, ...archive } = neu.took.find((p) => p.type === 'history-archive') as Omit<HistoryArchivePlain, 'v'>;
    const chat = (await messengerLink(first.m, old.conv).carrier()) as `room:${string}`;
    const before = await neu.store.all();
    // The person deletes a chat here; nothing that comes after may bring it back.
    await neu.store.forgetChat('dm:carol');
    const left = await neu.store.all();
    assert.ok(left.length < before.length);
    // Another transfer id and another attachment under the old tag: forged. The same message again: a replay.
    const forged = { ...archive, transfer: b64(randomBytes(16)), sentAt: 0 };
    const swapped = { ...archive, parts: [{ ...archive.parts[0]!, id: b64(randomBytes(16)) }], sentAt: 0 };
    for (const p of [forged, swapped, { ...archive, sentAt: 0 }]) await old.conv.outbox.add(chat, p, { priority: 'bulk' });
    await until(() => refusals(neu).length === 3, 'the three refusals');
    assert.deepEqual(refusals(neu), ['history-archive:forged', 'history-archive:forged', 'history-archive:replayed']);
    assert.deepEqual(await neu.store.all(), left, 'nothing imported');
  } finally {
    await Promise.all([old.close(), neu.close()]);
  }
});

/** The receiver's downloads of attachments come with one byte flipped: the service altered what it stores. */
const alterDownloads =
  (f: FetchLike): FetchLike =>
  async (url, init) => {
    const res = await f(url, init);
    if ((init?.method ?? 'GET') !== 'GET' || !/\/api\/attachments\/[^/?]+$/.test(new URL(url).pathname) || !res.ok) return res;
    const bytes = new Uint8Array(await res.arrayBuffer());
    bytes[100]! ^= 1;
    return new Response(bytes, { status: res.status, headers: res.headers });
  };

test('an archive the service altered is refused with a clear error, imports nothing, and the next request starts over', async () => {
  const { first, second, store, kept } = await account(500, [2000], { wrapSecond: alterDownloads });
  const old = await run(first, { store, kept });
  const neu = await run(second);
  try {
    await ask(old, neu, second.deviceId);
    await until(() => progress(neu, 'receive')?.error !== undefined, 'the refusal');
    const got = progress(neu, 'receive')!;
    assert.match(got.error!, /did not pass its check \(part 0 failed its tag\): it was damaged or altered/);
    assert.equal(got.state, 'active');
    assert.deepEqual(refusals(neu), [`history-archive:${got.error}`]);
    assert.deepEqual(await neu.store.all(), [], 'nothing imported');
    assert.deepEqual(await neu.kept.list(), []);
    // A request after it is answered by a new transfer (which this device refuses the same way).
    await ask(old, neu, second.deviceId);
    await until(() => refusals(neu).length === 2, 'the second refusal');
    assert.notEqual(progress(neu, 'receive')!.transfer, got.transfer);
  } finally {
    await Promise.all([old.close(), neu.close()]);
  }
});

test('a device of an older version asks without taking archives and gets the history as paced chunks', async () => {
  const { first, second, store, kept, history } = await account(300, [1000]);
  const old = await run(first, { store, kept });
  const neu = await run(second, { old: true });
  try {
    await ask(old, neu, second.deviceId);
    await until(finished(neu, 'receive'), 'the transfer to end');
    assert.deepEqual(refusals(neu), []);
    assert.equal((await neu.store.all()).length, history.length);
    const types = new Set(neu.took.map((p) => p.type));
    assert.ok(types.has('history-offer') && types.has('history-chunk') && !types.has('history-archive'), 'an offer and chunks, as before');
  } finally {
    await Promise.all([old.close(), neu.close()]);
  }
});
