/**
 * The PostgreSQL send (one transaction: `send_facts` of migration 4, the send rules, one write)
 * and ack (one statement): the cases the shared storage suite does not reach one by one. Room
 * fan-out order, every refusal and the answer to a used id behind it, the contacts limit of a
 * first DM, a queue already past its cap, the round trips themselves, and concurrent sends
 * batched into one transaction (send-batch.ts).
 */
import { describe, test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { LIMITS, type Target } from '@svc/protocol';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { withDefaultUser } from '../../src/store/postgres/db.js';
import type { SendInput } from '../../src/store/types.js';
import { id16, iv, ct, ulid } from '@svc/testkit/harness';
import { dropSchema, freshSchema, spyQueries, sqlIn, testPgUrl } from '@svc/testkit/postgres';
import { NOW, account, wrapped } from './suite.js';

const send = (id: string, from: string, to: Target, keyId: string, senderDevice: string, now = NOW): SendInput => ({
  id,
  from,
  to,
  keyId,
  iv: iv(),
  ct: ct(),
  senderDevice,
  now,
});

/** Each device's queue length (queue_lengths, 0 without a row), once the store has written its counts, and the real row count, to show they agree. */
async function lengths(store: PostgresStore, schema: string): Promise<{ id: string; queue_len: number; n: number }[]> {
  await store.flushQueueCounts();
  return sqlIn(
    schema,
    'SELECT id, COALESCE((SELECT queue_len FROM queue_lengths l WHERE l.device_id = d.id), 0) AS queue_len, (SELECT COUNT(*)::int FROM queue q WHERE q.device_id = d.id) AS n FROM devices d ORDER BY id',
  );
}

/** Another instance's connection to the schema, for a transaction held open while the store works. */
async function otherConnection(schema: string): Promise<pg.Client> {
  const other = new pg.Client({ connectionString: withDefaultUser(testPgUrl), options: `-c search_path=${schema}` });
  await other.connect();
  return other;
}

/** What `wait` answers for a promise still pending after half a second: it waited for a lock. */
const late = Symbol('waited');
const wait = <T>(p: Promise<T>) => Promise.race([p, new Promise<typeof late>((r) => setTimeout(() => r(late), 500))]);

/** The queue counts a store writes in the background (queue-counts.ts), apart from its sends. */
const COUNTING = /queue_counted|queue_trim/;

/**
 * Records the text of every statement sent while `fn` runs, but for the background counting
 * unless `all`; `fail` may make one of them throw instead.
 */
async function statements(fn: () => Promise<void>, fail?: (text: string) => boolean, all = false): Promise<string[]> {
  const sent: string[] = [];
  await spyQueries(({ text }) => {
    if (all || !COUNTING.test(text)) sent.push(text);
    if (fail?.(text)) return Promise.reject(Object.assign(new Error('deadlock detected'), { code: '40P01' }));
  }, fn);
  return sent;
}

describe('store: postgres, the send transaction and the ack statement', () => {
  let schema: string;
  let store: PostgresStore;
  beforeEach(async () => {
    schema = await freshSchema();
    store = await PostgresStore.open(testPgUrl, { schema, max: 4 });
  });
  afterEach(async () => {
    await store.close();
    await dropSchema(schema);
  });

  /** alice owns the room; carol joins before bob. Device ids are chosen so that id order differs from fan-out order. */
  async function room(): Promise<{ roomId: string; keyId: string }> {
    for (const n of ['alice', 'bob', 'carol']) await store.registerAccount(account(n));
    for (const [n, d] of [
      ['alice', 'k-alice-1'],
      ['bob', 'z-bob-1'],
      ['alice', 'b-alice-2'],
      ['bob', 'a-bob-2'],
      ['carol', 'm-carol-1'],
    ] as const) {
      await store.addDevice(n, d, NOW);
    }
    const roomId = id16();
    const k1 = id16();
    const k2 = id16();
    const k3 = id16();
    await store.createRoom({ id: roomId, name: 'Ops', owner: 'alice', keyId: k1, keys: [wrapped('alice')], now: NOW });
    const c = await store.changeMembers({
      roomId,
      caller: 'alice',
      add: ['carol'],
      remove: [],
      keyId: k2,
      keys: ['alice', 'carol'].map(wrapped),
      now: NOW,
    });
    assert.ok('room' in c);
    const b = await store.changeMembers({
      roomId,
      caller: 'alice',
      add: ['bob'],
      remove: [],
      keyId: k3,
      keys: ['alice', 'carol', 'bob'].map(wrapped),
      now: NOW,
    });
    assert.ok('room' in b);
    return { roomId, keyId: k3 };
  }

  test('a room send queues for members by join order, devices oldest first, never the sending device', async () => {
    const { roomId, keyId } = await room();
    const id = ulid(NOW);
    const r = await store.sendMessage(send(id, 'alice', { room: roomId }, keyId, 'k-alice-1'));
    assert.ok('status' in r && r.status === 'queued');
    assert.deepEqual(r.targets, [
      { deviceId: 'b-alice-2', nick: 'alice', pushable: false },
      { deviceId: 'm-carol-1', nick: 'carol', pushable: false },
      { deviceId: 'z-bob-1', nick: 'bob', pushable: false },
      { deviceId: 'a-bob-2', nick: 'bob', pushable: false },
    ]);
    assert.equal(r.roomName, 'Ops');
    assert.equal(r.json, JSON.stringify({ id, to: { room: roomId }, from: 'alice', keyId, iv: r.envelope.iv, ct: r.envelope.ct, ts: NOW }));
    const [stored] = await sqlIn<{ json: string }>(schema, 'SELECT json FROM envelopes WHERE id = $1', [id]);
    assert.equal(stored!.json, r.json, 'the stored JSON is the one built by the caller, byte for byte');
    // Entries are numbered in fan-out order.
    const queued = await sqlIn<{ device_id: string }>(schema, 'SELECT device_id FROM queue ORDER BY seq');
    assert.deepEqual(
      queued.map((q) => q.device_id),
      r.targets.map((t) => t.deviceId),
    );
    for (const l of await lengths(store, schema)) assert.equal(l.queue_len, l.n, l.id);
    // An older room key id is still valid for sending.
    const [k1] = await sqlIn<{ key_id: string }>(schema, 'SELECT key_id FROM room_key_ids WHERE key_id <> $1 ORDER BY key_id LIMIT 1', [keyId]);
    const old = await store.sendMessage(send(ulid(NOW), 'bob', { room: roomId }, k1!.key_id, 'a-bob-2'));
    assert.ok('status' in old && old.status === 'queued');
    assert.deepEqual(
      old.targets.map((t) => t.deviceId),
      ['k-alice-1', 'b-alice-2', 'm-carol-1', 'z-bob-1'],
    );
  });

  test('refusals write nothing; a used id is answered before them as a retry (its sender) or a conflict', async () => {
    const { roomId, keyId } = await room();
    await store.registerAccount(account('dave'));
    await store.addDevice('dave', 'd-dave-1', NOW);
    await store.registerAccount(account('gone'));
    await store.deleteAccount('gone', NOW);

    const fresh = () => ulid(NOW);
    assert.deepEqual(await store.sendMessage(send(fresh(), 'dave', { room: roomId }, keyId, 'd-dave-1')), { error: 'not_member' });
    assert.deepEqual(await store.sendMessage(send(fresh(), 'dave', { room: id16() }, keyId, 'd-dave-1')), { error: 'not_member' }, 'no such room');
    assert.deepEqual(await store.sendMessage(send(fresh(), 'alice', { room: roomId }, id16(), 'k-alice-1')), { error: 'unknown_key' });
    assert.deepEqual(await store.sendMessage(send(fresh(), 'alice', { dm: 'zed' }, 'dm', 'k-alice-1')), { error: 'unknown_user' });
    assert.deepEqual(
      await store.sendMessage(send(fresh(), 'alice', { dm: 'gone' }, 'dm', 'k-alice-1')),
      { error: 'unknown_user' },
      'a deleted account',
    );
    assert.deepEqual(await store.sendMessage(send(fresh(), 'alice', { dm: 'alice' }, 'dm', 'k-alice-1')), { error: 'self' });
    assert.deepEqual(await sqlIn(schema, 'SELECT id FROM envelopes'), []);
    assert.deepEqual(await sqlIn(schema, 'SELECT seq FROM queue'), []);
    assert.deepEqual(await sqlIn(schema, "SELECT nick FROM contacts WHERE nick = 'alice' OR peer = 'alice'"), []);

    const id = ulid(NOW);
    const first = await store.sendMessage(send(id, 'carol', { room: roomId }, keyId, 'm-carol-1'));
    assert.ok('status' in first && first.status === 'queued');
    await store.leaveRoom(roomId, 'carol');
    assert.deepEqual(
      await store.sendMessage(send(id, 'carol', { room: roomId }, keyId, 'm-carol-1', NOW + 9)),
      { status: 'retry', id, ts: NOW },
      'a retry stays a retry after its sender left the room',
    );
    assert.deepEqual(await store.sendMessage(send(id, 'dave', { room: roomId }, keyId, 'd-dave-1')), { error: 'id_conflict' });
    assert.deepEqual(await store.sendMessage(send(id, 'dave', { dm: 'alice' }, 'dm', 'd-dave-1')), { error: 'id_conflict' });
    assert.equal((await sqlIn(schema, 'SELECT seq FROM queue')).length, 4, 'queued once');
  });

  test("a first DM adds each side as the other's contact while that side has room", async () => {
    await store.registerAccount(account('alice'));
    await store.registerAccount(account('bob'));
    await store.addDevice('alice', 'a-device-1', NOW);
    await sqlIn(schema, "INSERT INTO contacts (nick, peer, created_at) SELECT 'alice', 'peer' || i, 0 FROM generate_series(1, $1::int) AS i", [
      LIMITS.contactsPerAccount,
    ]);
    const r = await store.sendMessage(send(ulid(NOW), 'alice', { dm: 'bob' }, 'dm', 'a-device-1'));
    assert.ok('status' in r && r.status === 'queued');
    assert.equal(r.roomName, null);
    assert.deepEqual(r.targets, [], 'bob has no device yet: stored, queued nowhere');
    assert.deepEqual(await sqlIn(schema, "SELECT nick, peer, created_at FROM contacts WHERE 'bob' IN (nick, peer)"), [
      { nick: 'bob', peer: 'alice', created_at: String(NOW) },
    ]);
    assert.equal((await sqlIn(schema, "SELECT seq FROM contacts WHERE nick = 'alice'")).length, LIMITS.contactsPerAccount, 'never over the limit');
  });

  /** bob's device with `n` entries queued before any send of the test (no envelope rows needed): old1 is the oldest. */
  async function queued(n: number, queueLen: number): Promise<void> {
    await store.registerAccount(account('alice'));
    await store.registerAccount(account('bob'));
    await store.addDevice('alice', 'a-device-1', NOW);
    await store.addDevice('bob', 'b-device-1', NOW);
    await sqlIn(schema, "INSERT INTO queue (device_id, envelope_id, ts) SELECT 'b-device-1', 'old' || i, i FROM generate_series(1, $1::int) AS i", [
      n,
    ]);
    await sqlIn(
      schema,
      "INSERT INTO queue_lengths (device_id, queue_len) VALUES ('b-device-1', $1) ON CONFLICT (device_id) DO UPDATE SET queue_len = EXCLUDED.queue_len",
      [queueLen],
    );
  }

  async function bobsQueue(): Promise<{ n: number; first: string; last: string; queue_len: number }> {
    const [row] = await sqlIn<{ n: number; first: string; last: string; queue_len: number }>(
      schema,
      `SELECT COUNT(*)::int AS n,
              (SELECT envelope_id FROM queue WHERE device_id = 'b-device-1' ORDER BY seq LIMIT 1) AS first,
              (SELECT envelope_id FROM queue WHERE device_id = 'b-device-1' ORDER BY seq DESC LIMIT 1) AS last,
              (SELECT queue_len FROM queue_lengths WHERE device_id = 'b-device-1') AS queue_len
       FROM queue WHERE device_id = 'b-device-1'`,
    );
    return row!;
  }

  test('a queue past its cap is cut back to the cap, oldest first, once its sends are counted, and queue_len counts what is left', async () => {
    await queued(LIMITS.queuePerDevice + 4, LIMITS.queuePerDevice + 4);
    const id = ulid(NOW);
    const r = await store.sendMessage(send(id, 'alice', { dm: 'bob' }, 'dm', 'a-device-1'));
    assert.ok('status' in r && r.status === 'queued');
    await store.flushQueueCounts();
    assert.deepEqual(await bobsQueue(), { n: LIMITS.queuePerDevice, first: 'old6', last: id, queue_len: LIMITS.queuePerDevice });
    for (const l of await lengths(store, schema)) assert.equal(l.queue_len, l.n, l.id);
  });

  test('a stream open trims the queue to the cap and counts it before the replay reads, also when its count was lost', async () => {
    // A crash between a send's commit and its count leaves queue_len short, here by all of it.
    await queued(LIMITS.queuePerDevice + 4, 0);
    await store.deviceConnected('b-device-1', NOW);
    assert.deepEqual(await bobsQueue(), {
      n: LIMITS.queuePerDevice,
      first: 'old5',
      last: `old${LIMITS.queuePerDevice + 4}`,
      queue_len: LIMITS.queuePerDevice,
    });
    // A count that is long (a recount met a send not yet counted) drops nothing under the cap.
    await sqlIn(
      schema,
      "INSERT INTO queue_lengths (device_id, queue_len) VALUES ('b-device-1', $1) ON CONFLICT (device_id) DO UPDATE SET queue_len = EXCLUDED.queue_len",
      [LIMITS.queuePerDevice + 50],
    );
    await sqlIn(schema, "DELETE FROM queue WHERE envelope_id IN ('old5', 'old6')");
    await store.sendMessage(send(ulid(NOW), 'alice', { dm: 'bob' }, 'dm', 'a-device-1'));
    await store.flushQueueCounts();
    const after = await bobsQueue();
    assert.deepEqual([after.n, after.first, after.queue_len], [LIMITS.queuePerDevice - 1, 'old7', LIMITS.queuePerDevice - 1]);
  });

  test('the counts of many sends are written after them, one statement for all, without waiting for its WAL flush', async () => {
    // A store whose counts wait for the flush below, however slow the machine.
    await store.close();
    store = await PostgresStore.open(testPgUrl, { schema, max: 4, countIntervalMs: 60_000 });
    const { roomId, keyId } = await room();
    const sent = await statements(
      async () => {
        await Promise.all([
          store.sendMessage(send(ulid(NOW), 'alice', { room: roomId }, keyId, 'k-alice-1')),
          store.sendMessage(send(ulid(NOW), 'bob', { dm: 'carol' }, 'dm', 'a-bob-2')),
        ]);
        await store.sendMessage(send(ulid(NOW), 'carol', { room: roomId }, keyId, 'm-carol-1'));
        await store.flushQueueCounts();
      },
      undefined,
      true,
    );
    const counts = sent.filter((t) => COUNTING.test(t));
    assert.equal(counts.length, 1);
    assert.match(counts[0]!, /^BEGIN; SET LOCAL synchronous_commit TO off; SELECT queue_counted\(/);
    const lastWrite = Math.max(...sent.map((t, i) => (WRITE.test(t) ? i : -1)));
    assert.ok(sent.indexOf(counts[0]!) > lastWrite, 'counted after the last write');
    for (const l of await lengths(store, schema)) assert.equal(l.queue_len, l.n, l.id);
  });

  test('the counts lock only the length rows (migration 7): a device row another transaction holds does not hold them up, and a deleted device takes its length with it', async () => {
    const { roomId, keyId } = await room();
    // Another transaction holds carol's device row, as a push claim or a stream open does.
    const other = await otherConnection(schema);
    try {
      await other.query('BEGIN');
      await other.query("SELECT 1 FROM devices WHERE id = 'm-carol-1' FOR NO KEY UPDATE");
      const r = await wait(store.sendMessage(send(ulid(NOW), 'alice', { room: roomId }, keyId, 'k-alice-1')));
      assert.ok(r !== late && 'status' in r && r.status === 'queued', 'the send went through');
      assert.notEqual(await wait(store.flushQueueCounts()), late, 'the counts did not wait for the device row');
      await other.query('COMMIT');
    } finally {
      await other.end();
    }
    for (const l of await lengths(store, schema)) assert.equal(l.queue_len, l.n, l.id);
    assert.deepEqual(await sqlIn(schema, "SELECT queue_len FROM queue_lengths WHERE device_id = 'm-carol-1'"), [{ queue_len: 1 }]);
    assert.equal(await store.deleteDevice('carol', 'm-carol-1'), true);
    assert.deepEqual(await sqlIn(schema, "SELECT queue_len FROM queue_lengths WHERE device_id = 'm-carol-1'"), []);
  });

  test('a device deleted before its sends are counted is left out of the counts, and the other devices are counted', async () => {
    await store.close();
    store = await PostgresStore.open(testPgUrl, { schema, max: 4, countIntervalMs: 60_000 });
    const { roomId, keyId } = await room();
    await store.sendMessage(send(ulid(NOW), 'alice', { room: roomId }, keyId, 'k-alice-1'));
    assert.equal(await store.deleteDevice('carol', 'm-carol-1'), true);
    await store.flushQueueCounts();
    const rows = await sqlIn<{ device_id: string; queue_len: number }>(schema, 'SELECT device_id, queue_len FROM queue_lengths ORDER BY device_id');
    assert.deepEqual(
      rows.map((r) => r.device_id),
      ['a-bob-2', 'b-alice-2', 'z-bob-1'],
    );
    for (const l of await lengths(store, schema)) assert.equal(l.queue_len, l.n, l.id);
  });

  test("sends to a room do not wait for another transaction's send to the same devices; that device's deletion does", async () => {
    const { roomId, keyId } = await room();
    // Another instance's send holds the room's devices, between its facts and its commit.
    const other = await otherConnection(schema);
    try {
      await other.query('BEGIN');
      await other.query(`SELECT * FROM send_facts(ARRAY[$1], ARRAY['bob'], ARRAY[NULL]::TEXT[], ARRAY[$2], ARRAY[$3], 2)`, [
        ulid(NOW),
        roomId,
        keyId,
      ]);
      const r = await wait(store.sendMessage(send(ulid(NOW), 'alice', { room: roomId }, keyId, 'k-alice-1')));
      assert.ok(r !== late && 'status' in r && r.status === 'queued', 'the send went through');
      const deletion = store.deleteDevice('carol', 'm-carol-1');
      assert.equal(await wait(deletion), late, 'the deletion waits for the other send');
      // The other send queues for carol's device and commits; the deletion then removes it too.
      await other.query("INSERT INTO queue (device_id, envelope_id, ts) VALUES ('m-carol-1', 'theirs', 1)");
      await other.query('COMMIT');
      assert.equal(await deletion, true);
      assert.deepEqual(await sqlIn(schema, "SELECT envelope_id FROM queue WHERE device_id = 'm-carol-1'"), []);
    } finally {
      await other.end();
    }
  });

  test('ack drops only the listed entries of that device; unknown ids are ignored', async () => {
    await store.registerAccount(account('alice'));
    await store.registerAccount(account('bob'));
    for (const [n, d] of [
      ['alice', 'a-device-1'],
      ['alice', 'a-device-2'],
      ['bob', 'b-device-1'],
    ] as const)
      await store.addDevice(n, d, NOW);
    const ids = [ulid(NOW), ulid(NOW), ulid(NOW)];
    for (const id of ids) await store.sendMessage(send(id, 'alice', { dm: 'bob' }, 'dm', 'a-device-1'));
    await store.ack('b-device-1', [ids[0]!, ids[2]!, 'nope']);
    await store.ack('b-device-1', []);
    await store.ack('no-such-device', [ids[1]!]);
    assert.deepEqual(
      (await store.readQueue('b-device-1', 0, 10)).map((e) => e.id),
      [ids[1]],
    );
    assert.equal((await store.readQueue('a-device-2', 0, 10)).length, 3);
    assert.deepEqual(await lengths(store, schema), [
      { id: 'a-device-1', queue_len: 0, n: 0 },
      { id: 'a-device-2', queue_len: 3, n: 3 },
      { id: 'b-device-1', queue_len: 1, n: 1 },
    ]);
  });

  /** Sends that arrive together, with the answer each must get: the same as if each had been sent alone. */
  async function concurrentSends(): Promise<{ sends: SendInput[]; check: (results: unknown[]) => Promise<void> }> {
    const { roomId, keyId } = await room();
    await store.registerAccount(account('dave'));
    await store.addDevice('dave', 'd-dave-1', NOW);
    const twice = ulid(NOW);
    const taken = ulid(NOW);
    const sends = [
      send(ulid(NOW), 'alice', { room: roomId }, keyId, 'k-alice-1'),
      send(twice, 'alice', { dm: 'bob' }, 'dm', 'k-alice-1'),
      send(twice, 'alice', { dm: 'bob' }, 'dm', 'k-alice-1', NOW + 5),
      send(taken, 'carol', { dm: 'bob' }, 'dm', 'm-carol-1'),
      send(taken, 'dave', { dm: 'bob' }, 'dm', 'd-dave-1'),
      send(ulid(NOW), 'dave', { room: roomId }, keyId, 'd-dave-1'),
      send(ulid(NOW), 'bob', { dm: 'zed' }, 'dm', 'a-bob-2'),
    ];
    const check = async (results: unknown[]): Promise<void> => {
      const [roomSend, first, again, carols, daves, notMember, unknown] = results as Awaited<ReturnType<PostgresStore['sendMessage']>>[];
      assert.ok(roomSend && 'status' in roomSend && roomSend.status === 'queued');
      assert.deepEqual(
        roomSend.targets.map((t) => t.deviceId),
        ['b-alice-2', 'm-carol-1', 'z-bob-1', 'a-bob-2'],
      );
      assert.ok(first && 'status' in first && first.status === 'queued');
      assert.deepEqual(again, { status: 'retry', id: twice, ts: NOW }, 'the second send of one id is a retry of the first');
      assert.ok(carols && 'status' in carols && carols.status === 'queued');
      assert.deepEqual(daves, { error: 'id_conflict' }, 'an id another sender used first in the same batch');
      assert.deepEqual(notMember, { error: 'not_member' });
      assert.deepEqual(unknown, { error: 'unknown_user' });
      assert.equal((await sqlIn(schema, 'SELECT id FROM envelopes')).length, 3, 'three envelopes stored, each once');
      // The first DM between carol and bob made them contacts; dave's refused one did not.
      assert.deepEqual(await sqlIn(schema, "SELECT nick, peer FROM contacts WHERE nick IN ('bob', 'dave') ORDER BY nick, peer"), [
        { nick: 'bob', peer: 'alice' },
        { nick: 'bob', peer: 'carol' },
      ]);
      for (const l of await lengths(store, schema)) assert.equal(l.queue_len, l.n, l.id);
    };
    return { sends, check };
  }

  const FACTS = /send_facts/;
  const WRITE = /send_write/;

  test('sends that arrive together go out as one transaction of two round trips: BEGIN with their facts, their writes with COMMIT', async () => {
    const { sends, check } = await concurrentSends();
    let results: unknown[] = [];
    const sent = await statements(async () => {
      results = await Promise.all(sends.map((m) => store.sendMessage(m)));
    });
    assert.deepEqual(
      sent.map((t) => (FACTS.test(t) ? 'facts' : WRITE.test(t) ? 'write' : t)),
      ['facts', 'write'],
    );
    assert.match(sent[0]!, /^BEGIN;/);
    assert.match(sent[1]!, /COMMIT$/);
    await check(results);
  });

  test("a batch that fails is not tried again as a batch: its sends run one by one and get the same answers, the caller's checks once each", async () => {
    const { sends, check } = await concurrentSends();
    let results: unknown[] = [];
    let failed = false;
    const admitted: string[] = [];
    const sent = await statements(
      async () => {
        results = await Promise.all(
          sends.map((m) =>
            store.sendMessage(m, async () => {
              admitted.push(m.id);
            }),
          ),
        );
      },
      (text) => FACTS.test(text) && !failed && (failed = true),
    );
    assert.equal(sent.filter((t) => FACTS.test(t)).length, 1 + sends.length, 'the batch once, then each send alone');
    assert.equal(admitted.length, sends.length, 'a rate limit never counts a send twice');
    await check(results);
  });

  test("a send its caller's checks refuse writes nothing and rejects with what they threw; the others of its batch go on", async () => {
    const { roomId, keyId } = await room();
    const refused = send(ulid(NOW), 'alice', { dm: 'bob' }, 'dm', 'k-alice-1');
    const other = send(ulid(NOW), 'alice', { room: roomId }, keyId, 'k-alice-1');
    const seen: unknown[] = [];
    const [a, b] = await Promise.allSettled([
      store.sendMessage(refused, async (facts) => {
        seen.push(facts);
        throw new Error('rate_limited');
      }),
      store.sendMessage(other, async (facts) => {
        seen.push(facts);
      }),
    ]);
    assert.ok(a.status === 'rejected');
    assert.equal((a.reason as Error).message, 'rate_limited');
    assert.ok(b.status === 'fulfilled' && 'status' in b.value && b.value.status === 'queued');
    assert.deepEqual(seen, [
      { room: false, recipientIsLive: true },
      { room: true, senderIsMember: true, keyIsKnown: true },
    ]);
    assert.deepEqual(await sqlIn(schema, 'SELECT id FROM envelopes'), [{ id: other.id }]);
    assert.deepEqual(await sqlIn(schema, "SELECT nick FROM contacts WHERE nick IN ('alice', 'bob')"), [], 'the refused first DM added no contact');
    for (const l of await lengths(store, schema)) assert.equal(l.queue_len, l.n, l.id);
  });

  test('a send costs two round trips (BEGIN with the facts, the write with COMMIT), a refused one too, an ack one statement', async () => {
    const { roomId, keyId } = await room();
    await store.sendMessage(send(ulid(NOW), 'alice', { dm: 'bob' }, 'dm', 'k-alice-1')); // warm the pool
    let id = '';
    const sent = await statements(async () => {
      id = ulid(NOW);
      await store.sendMessage(send(id, 'alice', { room: roomId }, keyId, 'k-alice-1'));
      await store.sendMessage(send(ulid(NOW), 'bob', { dm: 'carol' }, 'dm', 'a-bob-2')); // a first DM: contacts too
      await store.sendMessage(send(ulid(NOW), 'bob', { dm: 'zed' }, 'dm', 'a-bob-2'));
      await store.ack('m-carol-1', [id]);
    });
    assert.deepEqual(
      sent.map((t) => (FACTS.test(t) ? 'facts' : WRITE.test(t) ? 'write' : /ack_envelopes/.test(t) ? 'ack' : t)),
      ['facts', 'write', 'facts', 'write', 'facts', 'COMMIT', 'ack'],
    );
    for (const l of await lengths(store, schema)) assert.equal(l.queue_len, l.n, l.id);
  });

  test('an id another instance stores while a send runs makes the send run again and answer it as used', async () => {
    await store.registerAccount(account('alice'));
    await store.registerAccount(account('bob'));
    await store.addDevice('alice', 'a-device-1', NOW);
    await store.addDevice('bob', 'b-device-1', NOW);
    const id = ulid(NOW);
    // The other instance's send commits between this send's facts and its write.
    let raced = false;
    const sent = await statements(async () => {
      const r = await spyQueries(
        ({ text }, go) => {
          if (!WRITE.test(text) || raced) return;
          raced = true;
          return sqlIn(schema, "INSERT INTO envelopes (id, sender, ts, json) VALUES ($1, 'bob', $2, '{}')", [id, NOW - 1]).then(go);
        },
        () => store.sendMessage(send(id, 'alice', { dm: 'bob' }, 'dm', 'a-device-1')),
      );
      assert.deepEqual(r, { error: 'id_conflict' });
    });
    assert.equal(sent.filter((t) => FACTS.test(t)).length, 2, 'the facts read again');
    assert.deepEqual(await sqlIn(schema, 'SELECT device_id FROM queue'), [], 'nothing of the first attempt stands');
    assert.deepEqual(await sqlIn(schema, 'SELECT nick FROM contacts'), []);
    for (const l of await lengths(store, schema)) assert.equal(l.queue_len, l.n, l.id);
  });
});
