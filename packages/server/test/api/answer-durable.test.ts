/**
 * Answers wait for the disk; events do not (docs/DESIGN.md, "Durability"). The embedded store
 * settles a write when its statements are done, so its events go out in commit order at once,
 * and the route answers only after `durable()`: a 202 still means the message is on disk, and a
 * write lost before its sync turns the answer into a 500.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { Stream, dmBody, startServer, userWithDevices, type TestServer } from '@svc/testkit/harness';
import { assertError, gotMsg, send } from './messaging-helpers.js';

let server: TestServer;
let dir: string;
let store: SqliteStore;
/** While set, durable() waits for it (or fails with it) before the store's own barrier. */
let hold: Promise<void> | null = null;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-durable-'));
  store = SqliteStore.open(join(dir, 'svc.db'), { settleBeforeSync: true });
  const own = store.durable.bind(store);
  store.durable = async (mark: number) => {
    if (hold) await hold;
    return own(mark);
  };
  server = await startServer({}, { store });
});
after(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

test('a msg event reaches the open stream before the 202, which waits until the message is durable', async () => {
  const a = await userWithDevices(server, 1);
  const b = await userWithDevices(server, 1);
  const s = await Stream.open(b.c, b.devices[0]!);
  try {
    assert.ok(await s.until((ev) => ev.some((e) => e.event === 'ready')));
    let release!: () => void;
    hold = new Promise((r) => (release = r));
    const body = dmBody(b.c.nick);
    let answered = false;
    const answer = send(a.c, body, a.devices[0]).then((r) => ((answered = true), r));
    assert.ok(await gotMsg(s, body.id), 'the event is out while the answer waits');
    assert.equal(answered, false);
    hold = null;
    release();
    const r = await answer;
    assert.equal(r.status, 202, r.text);
    assert.equal(r.json.id, body.id);
  } finally {
    hold = null;
    s.close();
  }
});

test('a write lost before its sync answers 500 internal, though its statements were done', async () => {
  const a = await userWithDevices(server, 1);
  const b = await userWithDevices(server, 1);
  hold = Promise.reject(new Error('the WAL sync failed'));
  hold.catch(() => {});
  try {
    const r = await send(a.c, dmBody(b.c.nick), a.devices[0]);
    assertError(r, 500, 'internal');
  } finally {
    hold = null;
  }
});

test('a GET answers without waiting for the disk', async () => {
  const a = await userWithDevices(server, 1);
  let release!: () => void;
  hold = new Promise((r) => (release = r));
  try {
    const r = await a.c.get('/api/devices');
    assert.equal(r.status, 200, r.text);
  } finally {
    hold = null;
    release();
  }
});
