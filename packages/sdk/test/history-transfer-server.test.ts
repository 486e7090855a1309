/**
 * The history transfer end to end over a real service at the default limits (30 messages a minute
 * per account): two devices of one account, each wired as an app wires it (Conversations over a
 * store, the transfer attached, the event stream feeding both), the history going as an archive
 * in the attachment store, and a drop on either side mid-way through the archive.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { DEFAULT_RATES } from '@svc/protocol';
import {
  attachTransfer,
  Conversations,
  isTransferRoom,
  MemoryStore,
  type FetchLike,
  type HistoryTransfer,
  type TransferEvent,
  type TransferProgress,
} from '../src/index.js';
import { fill, makeHistory } from './history-fixtures.js';
import { loginDevice, register, reload, sleep, startServer, type Device, type TestServer } from './server.js';

/** TRANSFER_MESSAGES=10000 (`npm run bench:transfer`) runs the first test at the size of a long history (about a second). */
const N = Number(process.env.TRANSFER_MESSAGES ?? 2000);

let server: TestServer;
before(async () => {
  server = await startServer({
    LIMIT_MESSAGES_PER_MIN: String(DEFAULT_RATES.messagesPerMin),
    LIMIT_WRITES_PER_MIN: String(DEFAULT_RATES.writesPerMin),
  });
});
after(async () => {
  await server.close();
});

async function until(pred: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
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
  events: TransferEvent[];
  close(): Promise<void>;
}

/** A device as the app runs it; the transfer loads after the stream's first `ready`, as documented. */
async function run(d: Device, store = new MemoryStore()): Promise<App> {
  const conv = new Conversations({ messenger: d.m, store });
  const transfer = attachTransfer(d.m, conv);
  const events: TransferEvent[] = [];
  transfer.on((e) => events.push(e));
  let ready = 0;
  const stream = d.m.events({
    onMsg: async (env) => void (await conv.receive(env)),
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
    events,
    async close() {
      conv.stop();
      await stream.close();
    },
  };
}

const progress = (a: App, role: TransferProgress['role']): TransferProgress | undefined => a.transfer.progress().find((p) => p.role === role);
const finished = (a: App, role: TransferProgress['role']) => () => progress(a, role)?.state === 'done';

/** An account with `n` records on its first device, and a second device signed in by password. */
async function account(n: number, o: { wrap?: (f: FetchLike) => FetchLike; wrapSecond?: (f: FetchLike) => FetchLike } = {}) {
  const first = await register(server, undefined, undefined, o.wrap ? { wrap: o.wrap } : {});
  const history = makeHistory(n, first.m.nick);
  const store = new MemoryStore();
  await fill(store, history);
  const second = await loginDevice(server, first.m.nick, first.password, `dev-${first.m.nick}-2`, o.wrapSecond ? { wrap: o.wrapSecond } : {});
  return { first, second, store, history };
}

/** The new device asks, the old one is asked and says "Send history". */
async function ask(old: App, neu: App, device: string): Promise<void> {
  await neu.transfer.request();
  await until(() => old.transfer.requests.some((r) => r.device === device), 'the request on the old device', 20_000);
  await old.transfer.send(device);
}

test(`a new device receives ${N.toLocaleString('en')} messages of history from another device of the account over the service at the default limits`, async (t) => {
  const { first, second, store } = await account(N);
  const old = await run(first, store);
  const neu = await run(second);
  try {
    const t0 = Date.now();
    await ask(old, neu, second.deviceId);
    await until(finished(neu, 'receive'), 'the transfer to end', 60_000);
    const ms = Date.now() - t0;
    const got = progress(neu, 'receive')!;
    t.diagnostic(`${N} records in ${got.chunks.total} chunks arrived in ${(ms / 1000).toFixed(1)} s at ${DEFAULT_RATES.messagesPerMin} messages/min`);
    assert.deepEqual(await neu.store.all(), await store.all(), 'the new device holds the same history');
    assert.deepEqual(got.records, { done: N, total: N });
    await until(finished(old, 'send'), 'the sender to hear the end', 30_000);
    assert.deepEqual(
      neu.events.filter((e) => e.type === 'refused'),
      [],
    );
    // The carrier: one private room of the account, which the app hides from the room list.
    const rooms = first.m.rooms.filter((r) => isTransferRoom(r, first.m.nick));
    assert.equal(rooms.length, 1);
    assert.deepEqual(rooms[0]!.members, [first.m.nick]);
  } finally {
    await Promise.all([old.close(), neu.close()]);
  }
});

test('a transfer resumes after the sending device loses its connection mid-way through the upload and reloads', async () => {
  // The connection drops as the archive's second part goes up (once: the reloaded page is online).
  let down = false;
  let dropped = false;
  const wrap =
    (f: FetchLike): FetchLike =>
    (url, init) => {
      if (!dropped && /\/api\/attachments\/[^/]+\/parts\/[1-9]/.test(url)) dropped = down = true;
      return down ? Promise.reject(new TypeError('fetch failed')) : f(url, init);
    };
  const { first, second, store, history } = await account(1200, { wrap });
  const old = await run(first, store);
  const neu = await run(second);
  let again: App | null = null;
  try {
    await ask(old, neu, second.deviceId);
    await until(() => down, 'the drop mid-upload');
    const state = first.m.exportSession();
    await old.close();
    assert.equal(progress(old, 'send')!.chunks.done, 0, 'the drop came before the archive was named');
    assert.equal(progress(neu, 'receive'), undefined);
    down = false;
    // The page reloads: a new Messenger from the saved session, the same store (outbox and state).
    again = await run(await reload(server, first, state), store);
    await until(finished(neu, 'receive'), 'the transfer to end');
    assert.equal((await neu.store.all()).length, history.length);
    await until(finished(again, 'send'), 'the sender to hear the end', 30_000);
    assert.deepEqual(
      neu.events.filter((e) => e.type === 'refused'),
      [],
    );
  } finally {
    await Promise.all([old.close(), neu.close(), again?.close()]);
  }
});

/**
 * The receiver's downloads of attachments stall after `bytes` bytes of the body (until the device
 * closes): a connection that goes quiet mid-way.
 */
function stallDownloads(bytes: number): (f: FetchLike) => FetchLike {
  return (f) => async (url, init) => {
    const res = await f(url, init);
    if ((init?.method ?? 'GET') !== 'GET' || !/\/api\/attachments\/[^/?]+$/.test(new URL(url).pathname) || !res.body) return res;
    const reader = res.body.getReader();
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(c) {
        if (sent >= bytes) {
          // Quiet from here on, until the device closes.
          await new Promise<void>((resolve) => init?.signal?.addEventListener('abort', () => resolve(), { once: true }));
          c.error(new TypeError('the connection was closed'));
          return;
        }
        const r = await reader.read();
        if (r.done) return c.close();
        const v = r.value.subarray(0, bytes - sent);
        sent += v.length;
        c.enqueue(v);
      },
    });
    return new Response(body, { status: res.status, headers: res.headers });
  };
}

test('a transfer resumes after the receiving device loses its connection mid-way through the download and reloads', async () => {
  // About 3 chunks of the archive; the download stalls after the first one.
  const { first, second, store, history } = await account(3500, { wrapSecond: stallDownloads(90_000) });
  const old = await run(first, store);
  const neu = await run(second);
  let again: App | null = null;
  try {
    await ask(old, neu, second.deviceId);
    await until(() => (progress(neu, 'receive')?.chunks.done ?? 0) >= 1, 'a first chunk received');
    const state = second.m.exportSession();
    await neu.close();
    const at = progress(neu, 'receive')!;
    assert.ok(at.chunks.done < at.chunks.total, 'the drop came before the end');
    const before = (await neu.store.all()).length;
    assert.ok(before > 0 && before < history.length, 'part of the history is in');
    again = await run(await reload(server, second, state), neu.store);
    await until(finished(again, 'receive'), 'the transfer to end');
    assert.equal((await again.store.all()).length, history.length);
    assert.deepEqual(
      again.events.filter((e) => e.type === 'refused'),
      [],
    );
    await until(finished(old, 'send'), 'the sender to hear the end', 30_000);
  } finally {
    await Promise.all([old.close(), neu.close(), again?.close()]);
  }
});
