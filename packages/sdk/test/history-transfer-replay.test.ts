/**
 * The history transfer against a service that replays what it once delivered: the rows of old
 * transfer envelopes go back into a device's queue in the real database, and the device takes
 * them at its next connection, as it would take anything the service sends. A replayed request
 * asks the person nothing, a request of a device the service no longer lists neither, and a
 * replayed history-archive message (the one message that names the history in the attachment
 * store) brings back nothing the person deleted.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { writeBehindService } from '@svc/testkit/harness';
import { attachTransfer, Conversations, MemoryStore, type HistoryTransfer, type PlainInput, type TransferEvent } from '../src/index.js';
import { fill, makeHistory } from './history-fixtures.js';
import { loginDevice, register, reload, sleep, startServer, type Device, type TestServer } from './server.js';

let server: TestServer;
before(async () => {
  // SQLite whatever the run's mode: the test writes to the server's database itself.
  server = await startServer({}, {}, 'sqlite');
});
after(async () => {
  await server.close();
});

async function until(pred: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

interface App {
  d: Device;
  transfer: HistoryTransfer;
  store: MemoryStore;
  events: TransferEvent[];
  /** Every transfer message this device took, by envelope id, once handled. */
  took: { id: string; plain: PlainInput }[];
  close(): Promise<void>;
}

async function run(d: Device, store = new MemoryStore()): Promise<App> {
  const conv = new Conversations({ messenger: d.m, store });
  const transfer = attachTransfer(d.m, conv, d.deviceId);
  const events: TransferEvent[] = [];
  transfer.on((e) => events.push(e));
  const took: App['took'] = [];
  let ready = 0;
  const stream = d.m.events({
    onMsg: async (env) => {
      const opened = await d.m.decryptEnvelope(env);
      await conv.take(opened);
      if (opened.ok && opened.plain.type.startsWith('history-')) took.push({ id: env.id, plain: opened.plain as PlainInput });
    },
    onReady: () => void ready++,
    backoffMs: { initial: 50, max: 200 },
  });
  stream.start();
  await until(() => ready > 0, 'ready');
  await conv.load();
  await transfer.load();
  return {
    d,
    transfer,
    store,
    events,
    took,
    async close() {
      conv.stop();
      await stream.close();
    },
  };
}

/** The service delivers these envelopes to `deviceId` once more: their rows go back into its queue once acknowledged. */
async function replay(ids: string[], deviceId: string): Promise<void> {
  const list = ids.map((id) => `'${id}'`).join(', ');
  await until(
    async () =>
      (
        await server.query(
          `SELECT 1 FROM queue q JOIN envelopes e ON e.rowid = q.envelope_key WHERE q.device_id = '${deviceId}' AND e.id IN (${list})`,
        )
      ).length === 0,
    'the acknowledgement of the envelopes to replay',
  );
  for (const id of ids)
    await writeBehindService(server.dbPath, 'INSERT INTO queue (envelope_key, device_id) SELECT rowid, ? FROM envelopes WHERE id = ?', [
      deviceId,
      id,
    ]);
}

async function queued(deviceId: string): Promise<number> {
  return Number((await server.query(`SELECT count(*) AS n FROM queue WHERE device_id = '${deviceId}'`))[0]!.n);
}

/** The same device after a reload: a new Messenger from its saved session, the same store. */
async function reopen(a: App): Promise<App> {
  const state = a.d.m.exportSession();
  await a.close();
  const d = await reload(server, a.d, state);
  d.deviceId = a.d.deviceId;
  return run(d, a.store);
}

/** The refusals of `a`, of one transfer when `transfer` is given. */
const refusals = (a: App, transfer?: string): string[] =>
  a.events.flatMap((e) => (e.type === 'refused' && (transfer === undefined || e.transfer === transfer) ? [`${e.kind}:${e.why}`] : []));
const tookAll = (a: App, ids: string[]) => () => ids.every((id) => a.took.some((x) => x.id === id));
const asked = (a: App): string[] => a.events.flatMap((e) => (e.type === 'request' ? [e.request.device] : []));
const received = (a: App) => a.transfer.progress().find((p) => p.role === 'receive');
const tookIds = (a: App, pred: (p: PlainInput) => boolean): string[] => a.took.filter((x) => pred(x.plain)).map((x) => x.id);
const ofTransfer = (transfer: string) => (p: PlainInput) => 'transfer' in p && p.transfer === transfer && p.type !== 'history-done';

/** An account with `n` records on its first device, and a second device signed in by password. */
async function account(n: number) {
  const first = await register(server);
  const history = makeHistory(n, first.m.nick);
  const store = new MemoryStore();
  await fill(store, history);
  const second = await loginDevice(server, first.m.nick, first.password, `dev-${first.m.nick}-2`);
  return { first, second, store, history };
}

/** The new device asks; the old one is asked, and the person there says "Send history". */
async function askAndSend(old: App, neu: App): Promise<void> {
  await neu.transfer.request();
  await until(() => old.transfer.requests.some((r) => r.device === neu.d.deviceId), 'the request on the old device');
  await old.transfer.send(neu.d.deviceId);
}

test('a history-request the service replays asks nothing: not once it was answered, nor from a device the service no longer lists', async () => {
  const { first, second, store } = await account(20);
  let old = await run(first, store);
  const neu = await run(second);
  try {
    await neu.transfer.request();
    await until(() => asked(old).length === 1, 'the request on the old device');
    const request = tookIds(old, (p) => p.type === 'history-request');
    await old.transfer.decline(second.deviceId); // "Not now"

    // The service puts the answered request back into the old device's queue.
    await replay(request, first.deviceId);
    old = await reopen(old);
    await until(tookAll(old, request), 'the replayed request');
    assert.deepEqual([asked(old), old.transfer.requests, refusals(old)], [[], [], ['history-request:replayed']]);

    // The new device asks again while the old one is away, and is removed from the account then.
    await old.close();
    await neu.transfer.request();
    await until(async () => (await queued(first.deviceId)) === 1, 'the second request queued');
    await neu.close();
    await first.m.api.deleteDevice(second.deviceId);
    old = await reopen(old);
    await until(() => old.took.length === 1, 'the request of the removed device');
    assert.deepEqual([asked(old), old.transfer.requests, refusals(old)], [[], [], ['history-request:not a device of this account']]);
  } finally {
    await Promise.all([old.close(), neu.close()]);
  }
});

test('a request waiting for an answer is asked about again only while the service lists its device', async () => {
  const { first, second, store } = await account(20);
  let old = await run(first, store);
  const neu = await run(second);
  try {
    await neu.transfer.request();
    await until(() => asked(old).length === 1, 'the request on the old device');
    assert.deepEqual(
      (await old.transfer.pendingRequests()).map((r) => r.device),
      [second.deviceId],
    );
    // Unanswered, the request waits across a reload; the device is removed meanwhile.
    await neu.close();
    await first.m.api.deleteDevice(second.deviceId);
    old = await reopen(old);
    assert.deepEqual(await old.transfer.pendingRequests(), [], 'no dialog for a removed device');
    assert.deepEqual(old.transfer.requests, [], 'and the request is dropped');
  } finally {
    await Promise.all([old.close(), neu.close()]);
  }
});

test('a history-archive message the service replays brings nothing back: a transfer that finished stays finished', async () => {
  const { first, second, store, history } = await account(300);
  const old = await run(first, store);
  let neu = await run(second);
  try {
    await askAndSend(old, neu);
    await until(() => received(neu)?.state === 'done', 'the first transfer');
    const t1 = received(neu)!.transfer;
    // A message counts as taken once its handling returned, a moment after the transfer is done.
    await until(() => tookIds(neu, ofTransfer(t1)).length >= 1, 'the archive message taken');
    const replayed = tookIds(neu, ofTransfer(t1));
    await until(() => old.transfer.progress().every((p) => p.state === 'done'), 'the sender to hear the end');
    // The person asks once more later (a second transfer), and then deletes a chat here.
    await askAndSend(old, neu);
    await until(() => received(neu)?.transfer !== t1 && received(neu)?.state === 'done', 'the second transfer');
    const chat = history[0]!.chat;
    await neu.store.forgetChat(chat);

    await replay(replayed, second.deviceId);
    neu = await reopen(neu);
    await until(tookAll(neu, replayed), 'the replayed archive message');
    assert.deepEqual(await neu.store.chat(chat), [], 'the deleted chat stays deleted');
    assert.deepEqual(
      refusals(neu, t1),
      replayed.map(() => 'history-archive:replayed'),
    );
  } finally {
    await Promise.all([old.close(), neu.close()]);
  }
});

test('a history-archive message that answers no request this device still waits on is refused, live or replayed, and imports nothing', async () => {
  const { first, second, store, history } = await account(300);
  // A third device of the account holds the same history.
  const third = await loginDevice(server, first.m.nick, first.password, `dev-${first.m.nick}-3`);
  const otherStore = new MemoryStore();
  await fill(otherStore, history);
  const old = await run(first, store);
  const other = await run(third, otherStore);
  let neu = await run(second);
  try {
    // The new device asks, and goes away; both other devices say "Send history".
    await neu.transfer.request();
    for (const a of [old, other]) await until(() => a.transfer.requests.some((r) => r.device === second.deviceId), 'the request');
    await neu.close();
    await old.transfer.send(second.deviceId);
    await until(async () => (await queued(second.deviceId)) >= 1, 'the first archive message queued');
    await other.transfer.send(second.deviceId);
    const t2 = other.transfer.progress()[0]!.transfer;
    await until(() => other.transfer.progress()[0]!.chunks.done === other.transfer.progress()[0]!.chunks.total, 'the second archive message sent');

    neu = await reopen(neu);
    await until(
      () => received(neu)?.state === 'done' && tookIds(neu, (p) => p.type === 'history-archive' && p.transfer === t2).length === 1,
      'both transfers',
    );
    assert.notEqual(received(neu)?.transfer, t2, 'the first archive message took the request');
    const late = tookIds(neu, ofTransfer(t2));
    assert.equal(refusals(neu, t2)[0], 'history-archive:not asked for');

    // The person deletes a chat; the service replays the second device's offer and chunks.
    const chat = history[0]!.chat;
    await neu.store.forgetChat(chat);
    await replay(late, second.deviceId);
    neu = await reopen(neu);
    await until(tookAll(neu, late), 'the replayed archive message');
    assert.deepEqual(await neu.store.chat(chat), [], 'the deleted chat stays deleted');
    assert.deepEqual(refusals(neu, t2), ['history-archive:not asked for']);
    assert.equal(received(neu)?.state, 'done');
  } finally {
    await Promise.all([old.close(), other.close(), neu.close()]);
  }
});
