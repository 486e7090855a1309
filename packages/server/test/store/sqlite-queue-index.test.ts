/**
 * Each device's queue entries are known in memory (queue-index.ts), not through an index of the
 * file: lengths, replay pages and the cap must match the queue's rows after every kind of change,
 * after a restart, after a rolled-back write and after another process's commit.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LIMITS } from '@svc/protocol';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { account, NOW } from './suite.js';
import { ct, iv, ulid } from '@svc/testkit/harness';

const rows = (s: SqliteStore) => (s.db.prepare('SELECT COUNT(*) AS n FROM queue').get() as { n: number }).n;

async function setup(s: SqliteStore): Promise<void> {
  await s.registerAccount(account('alice'));
  await s.registerAccount(account('bob'));
  await s.addDevice('alice', 'a-device-1', NOW);
  await s.addDevice('bob', 'b-device-1', NOW);
  await s.addDevice('bob', 'b-device-2', NOW);
}

const dm = (s: SqliteStore, n: number, now = NOW) =>
  Promise.all(
    Array.from({ length: n }, (_, i) =>
      s.sendMessage({
        id: ulid(now + i),
        from: 'alice',
        to: { dm: 'bob' },
        keyId: 'dm',
        iv: iv(),
        ct: ct(),
        senderDevice: 'a-device-1',
        now: now + i,
      }),
    ),
  );

test('the queued total in stats follows sends, acks, a device removal and an account deletion', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-counts-'));
  const s = SqliteStore.open(join(dir, 'svc.db'));
  try {
    await setup(s);
    assert.equal((await s.stats()).queuedEnvelopes, 0);
    await dm(s, 10);
    assert.equal((await s.stats()).queuedEnvelopes, 20);
    const ids = (await s.readQueue('b-device-1', 0, 3)).map((e) => e.id);
    await s.ack('b-device-1', [...ids, 'not-queued']);
    assert.equal((await s.stats()).queuedEnvelopes, 17);
    await s.deleteDevice('bob', 'b-device-2');
    assert.equal((await s.stats()).queuedEnvelopes, 7);
    await s.deleteAccount('bob', NOW);
    assert.equal((await s.stats()).queuedEnvelopes, 0);
    assert.equal(rows(s), 0);
  } finally {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('after a restart the cap counts the rows already queued', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-counts-'));
  const path = join(dir, 'svc.db');
  try {
    let s = SqliteStore.open(path);
    await setup(s);
    await dm(s, LIMITS.queuePerDevice - 1);
    await s.close();
    s = SqliteStore.open(path);
    assert.equal((await s.stats()).queuedEnvelopes, 2 * (LIMITS.queuePerDevice - 1));
    await dm(s, 3, NOW + LIMITS.queuePerDevice);
    const queued = (s.db.prepare("SELECT COUNT(*) AS n FROM queue WHERE device_id = 'b-device-1'").get() as { n: number }).n;
    assert.equal(queued, LIMITS.queuePerDevice, 'the oldest entries were dropped at the cap');
    assert.equal((await s.stats()).queuedEnvelopes, rows(s));
    await s.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a send whose transaction is lost leaves the counts matching the rows', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-counts-'));
  const s = SqliteStore.open(join(dir, 'svc.db'));
  try {
    await setup(s);
    await dm(s, 2);
    assert.equal((await s.stats()).queuedEnvelopes, 4);
    // The send runs (and counts its two entries), then SQLite gives the whole transaction up.
    const send = dm(s, 1, NOW + 100);
    const lost = s.group.run(() => {
      s.db.prepare('ROLLBACK').run();
      throw new Error('transaction lost');
    });
    await assert.rejects(send, /transaction lost/);
    await assert.rejects(lost, /transaction lost/);
    assert.equal(rows(s), 4);
    assert.equal((await s.stats()).queuedEnvelopes, 4);
    // And the cap check of the next send starts from the rows, not from the lost count.
    await dm(s, 1, NOW + 200);
    assert.equal((await s.stats()).queuedEnvelopes, 6);
    assert.equal(rows(s), 6);
  } finally {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('queue changes made by another process (the admin command) are counted, not missed', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-counts-'));
  const path = join(dir, 'svc.db');
  const s = SqliteStore.open(path);
  const admin = SqliteStore.open(path);
  try {
    await setup(s);
    await dm(s, 5);
    assert.equal((await s.stats()).queuedEnvelopes, 10);
    // Entries the other process removed are skipped by a replay that runs before this process
    // has written anything since (its index still lists them): the rest still come.
    const all = (await s.readQueue('b-device-1', 0, 10)).map((e) => e.id);
    await admin.ack('b-device-1', all.slice(0, 3));
    assert.deepEqual(
      (await s.readQueue('b-device-1', 0, 2)).map((e) => e.id),
      all.slice(3, 5),
    );
    await dm(s, 0);
    // The other process removes a device and its queue, and acks entries of another.
    await admin.deleteDevice('bob', 'b-device-2');
    assert.equal((await s.stats()).queuedEnvelopes, 2);
    await dm(s, 1, NOW + 100);
    assert.equal((await s.stats()).queuedEnvelopes, 3);
    assert.equal(rows(s), 3);
  } finally {
    await admin.close();
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the file keeps no index by device; replay pages through each device in key order, across a restart and a lost write', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-counts-'));
  const path = join(dir, 'svc.db');
  let s = SqliteStore.open(path);
  try {
    const indexes = s.db.prepare("SELECT name, origin FROM pragma_index_list('queue')").all() as { name: string; origin: string }[];
    assert.deepEqual(
      indexes.filter((i) => i.origin !== 'pk'),
      [],
      'the queue is one b-tree: its own key (envelope key, device), and no index',
    );
    await setup(s);
    await dm(s, 7);
    await s.registerAccount(account('carol'));
    await s.addDevice('carol', 'c-device-1', NOW);
    await s.sendMessage({
      id: ulid(NOW + 100),
      from: 'carol',
      to: { dm: 'bob' },
      keyId: 'dm',
      iv: iv(),
      ct: ct(),
      senderDevice: 'c-device-1',
      now: NOW + 100,
    });
    const all = async (device: string) => {
      const seen: { seq: number; id: string }[] = [];
      for (let after = 0; ;) {
        const page = await s.readQueue(device, after, 3);
        if (page.length === 0) return seen;
        seen.push(...page.map((e) => ({ seq: e.seq, id: e.id })));
        after = page[page.length - 1]!.seq;
      }
    };
    const expected = (device: string) =>
      s.db
        .prepare(
          'SELECT q.envelope_key AS seq, e.id AS id FROM queue q JOIN envelopes e ON e.rowid = q.envelope_key WHERE device_id = ? ORDER BY seq',
        )
        .all(device) as { seq: number; id: string }[];
    assert.equal((await all('b-device-1')).length, 8);
    assert.deepEqual(await all('b-device-1'), expected('b-device-1'));
    // A write that fails after queueing rows is rolled back; the index is read again from the file.
    await assert.rejects(
      s.group.run(() => {
        s.db.prepare("INSERT INTO queue (envelope_key, device_id) VALUES (1, 'b-device-1')").run();
        throw new Error('fails after queueing');
      }),
      /fails after queueing/,
    );
    assert.deepEqual(await all('b-device-1'), expected('b-device-1'));
    await s.close();
    s = SqliteStore.open(path);
    assert.deepEqual(await all('b-device-2'), expected('b-device-2'));
    await s.deleteDevice('bob', 'b-device-2');
    assert.deepEqual(expected('b-device-2'), []);
    assert.deepEqual(await all('b-device-2'), []);
    assert.equal((await all('b-device-1')).length, 8, 'the other device keeps its entries');
  } finally {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("an envelope's entries share its key, and a stale one in the index never reaches another device's entry", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-counts-'));
  const s = SqliteStore.open(join(dir, 'svc.db'));
  try {
    await setup(s);
    await dm(s, 2);
    const keys = (device: string) =>
      (s.db.prepare('SELECT envelope_key AS k FROM queue WHERE device_id = ? ORDER BY k').all(device) as { k: number }[]).map((r) => r.k);
    assert.deepEqual(keys('b-device-1'), keys('b-device-2'), "a DM's two entries are its envelope's key, once per device");
    // b-device-2's newest entry deleted behind the store's back, on its own connection: the index
    // in memory still holds its key, as a bug in a delete path would leave it. b-device-1's entry
    // of the same envelope has the same key.
    const [, newest] = keys('b-device-2');
    s.db.prepare("DELETE FROM queue WHERE device_id = 'b-device-2' AND envelope_key = ?").run(newest);
    const stale = (await s.readQueue('b-device-2', 0, 10)).map((e) => e.seq);
    assert.ok(!stale.includes(newest!), 'no replay of it to the stale device');
    await s.deleteDevice('bob', 'b-device-2');
    assert.deepEqual(keys('b-device-2'), []);
    assert.deepEqual(
      (await s.readQueue('b-device-1', 0, 10)).map((e) => e.seq),
      keys('b-device-1'),
      "dropping the stale device's queue leaves the other device's entries of the same envelopes",
    );
    assert.equal(keys('b-device-1').length, 2);
  } finally {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an envelope accepted after the clock went back is queued by its time, and the index keeps matching the rows', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-counts-'));
  const s = SqliteStore.open(join(dir, 'svc.db'));
  try {
    await setup(s);
    const send = (id: string, now: number) =>
      s.sendMessage({ id, from: 'alice', to: { dm: 'bob' }, keyId: 'dm', iv: iv(), ct: ct(), senderDevice: 'a-device-1', now });
    const [late, early, latest] = [ulid(NOW + 100), ulid(NOW + 50), ulid(NOW + 200)];
    await send(late, NOW + 100);
    await send(early, NOW + 50);
    await send(latest, NOW + 200);
    const order = async () => (await s.readQueue('b-device-1', 0, 10)).map((e) => e.id);
    assert.deepEqual(await order(), [early, late, latest], 'replayed in time order');
    // A replay resumed after the first entry finds the rest in order.
    const [first] = await s.readQueue('b-device-1', 0, 1);
    assert.deepEqual(
      (await s.readQueue('b-device-1', first!.seq, 10)).map((e) => e.id),
      [late, latest],
    );
    await s.ack('b-device-1', [late]);
    assert.deepEqual(await order(), [early, latest]);
    assert.equal((await s.stats()).queuedEnvelopes, 5);
    assert.equal(rows(s), 5);
  } finally {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
