/**
 * PostgreSQL and Redis restarting under load lose nothing (issue 6, part 3). Two instances of the
 * service run as child processes on a private PostgreSQL (postgres-child.ts) and a private Redis
 * (redis-child.ts) that this test owns: the machine's shared servers are never touched. While
 * clients on both instances send, receive and acknowledge, PostgreSQL is restarted PG_RESTARTS
 * times (alternately a crash, `pg_ctl stop -m immediate`, and a clean `-m fast`) and Redis
 * REDIS_RESTARTS times (SIGKILL: its data, in memory only, is gone). One of each in `npm test`,
 * five of each in `npm run soak:restarts`. Every envelope is counted at its receivers
 * (delivery-ledger.ts): none lost, duplicated or misrouted, and every stream that is opened again
 * resumes from its cursor. The run prints its row of docs/RELIABILITY.md's restart table.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, ORIGIN, Stream, TEST_RATES, addDevice, ct, id16, iv, nick, signup, ulid, wk, type TestServer } from '@svc/testkit/harness';
import { startChildOnFreePort, type ChildService } from '@svc/testkit/child';
import { Ledger, Reader, Sender, drain, printRow, tally } from './delivery-ledger.js';
import { PostgresChild } from './postgres-child.js';
import { RedisChild } from './redis-child.js';

function count(name: string, fallback: number): number {
  const n = Number(process.env[name] || fallback);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a whole number`);
  return n;
}
const PG_RESTARTS = count('PG_RESTARTS', 1);
const REDIS_RESTARTS = count('REDIS_RESTARTS', 1);

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The same signed-in account seen through another instance (the session is in the shared database). */
function through(c: Client, server: TestServer): Client {
  const other = new Client(server);
  other.cookie = c.cookie;
  other.nick = c.nick;
  other.authKey = c.authKey;
  return other;
}

describe('PostgreSQL and Redis restarting under load (two instances, private servers)', () => {
  const pg = new PostgresChild();
  const redis = new RedisChild();
  const instances: ChildService[] = [];

  before(async () => {
    await pg.init();
    await pg.start();
    await redis.start();
    for (let i = 0; i < 2; i++) {
      const env = { ...TEST_RATES, HOST: '127.0.0.1', ORIGIN, LOG_LEVEL: 'warn', DATABASE_URL: pg.url, REDIS_URL: redis.url };
      instances.push(await startChildOnFreePort((port) => ({ env: { ...env, PORT: String(port) }, log: false })));
    }
  });
  after(async () => {
    for (const p of instances) await p.kill();
    await redis.stop();
    await pg.destroy();
  });

  test(`${PG_RESTARTS} PostgreSQL and ${REDIS_RESTARTS} Redis restarts lose, duplicate and misroute no envelope, and every stream resumes from its cursor`, async () => {
    const [s0, s1] = instances.map((p) => ({ url: p.url }) as TestServer) as [TestServer, TestServer];
    const ledger = new Ledger();
    const account = async (devices: number) => {
      const c = await signup(s0, nick('rst'));
      const ids: string[] = [];
      for (let i = 0; i < devices; i++) ids.push(await addDevice(c));
      return { on: [c, through(c, s1)] as const, devices: ids };
    };
    const alice = await account(2);
    const bob = await account(2);
    const carol = await account(1);
    const roomId = id16();
    const keyId = id16();
    const [a0] = alice.on;
    assert.equal((await a0.post('/api/rooms', { id: roomId, name: 'restart room', keyId: id16(), keys: [wk(a0.nick)] })).status, 201);
    const members = [a0.nick, bob.on[0].nick, carol.on[0].nick];
    assert.equal((await a0.post(`/api/rooms/${roomId}/members`, { add: members.slice(1), remove: [], keyId, keys: members.map(wk) })).status, 200);

    // Readers on both instances; each sender on the instance where most of its targets are not,
    // so live delivery crosses instances through Redis.
    const readers = [
      new Reader(alice.on[0], alice.devices[0]!, ledger),
      new Reader(alice.on[1], alice.devices[1]!, ledger),
      new Reader(bob.on[1], bob.devices[0]!, ledger),
      new Reader(bob.on[0], bob.devices[1]!, ledger),
      new Reader(carol.on[1], carol.devices[0]!, ledger),
    ];
    const senders = [
      new Sender(alice.on[1], alice.devices[0]!, ledger, () => ({
        body: { id: ulid(), to: { dm: bob.on[0].nick }, keyId: 'dm', iv: iv(), ct: ct() },
        targets: [...bob.devices, alice.devices[1]!],
      })),
      new Sender(bob.on[0], bob.devices[0]!, ledger, () => ({
        body: { id: ulid(), to: { room: roomId }, keyId, iv: iv(), ct: ct() },
        targets: [...alice.devices, bob.devices[1]!, ...carol.devices],
      })),
      new Sender(carol.on[0], carol.devices[0]!, ledger, () => ({
        body: { id: ulid(), to: { dm: a0.nick }, keyId: 'dm', iv: iv(), ct: ct() },
        targets: [...alice.devices],
      })),
    ];

    /**
     * After an outage: every sender has been answered 202 again with nothing left to retry, and
     * when the streams ended (Redis), every reader has had a replay since `replays`, taken before
     * the stop (a reader may open its stream again while the restart is still being awaited).
     */
    async function recovered(what: string, replays: number[] | null): Promise<void> {
      const sent = senders.map((x) => x.accepted);
      const deadline = Date.now() + 60_000;
      for (;;) {
        const sendersBack = senders.every((x, i) => x.unsettled === 0 && x.accepted > sent[i]!);
        const readersBack = replays === null || readers.every((r, i) => r.replays > replays[i]!);
        if (sendersBack && readersBack) return;
        if (Date.now() > deadline) {
          const state = senders.map((x) => `sender ${x.c.nick}: ${x.accepted} accepted, ${x.unsettled} to retry, last failure ${x.lastFailure}`);
          const logs = instances.map((p, n) => `instance ${n} stderr:\n${p.output().slice(-4000)}`);
          assert.fail(
            `${what}: the service did not recover within 60 s\n${state.join('\n')}\n${readers.map((r, n) => `${r.state} (${replays?.[n] ?? '-'} before)`).join('\n')}\n${logs.join('\n')}`,
          );
        }
        await pause(100);
      }
    }

    const restarts: string[] = [];
    let immediate = 0;
    let fast = 0;
    try {
      for (const r of readers) r.start();
      for (const x of senders) x.start();
      for (let i = 0; i < Math.max(PG_RESTARTS, REDIS_RESTARTS); i++) {
        if (i < PG_RESTARTS) {
          await pause(700 + Math.random() * 800);
          const mode = i % 2 === 0 ? 'immediate' : 'fast';
          await pg.stop(mode);
          if (mode === 'immediate') immediate++;
          else fast++;
          await pause(300 + Math.random() * 700);
          await pg.start();
          restarts.push(`PostgreSQL ${mode}`);
          await recovered(`PostgreSQL restart ${i + 1}`, null);
        }
        if (i < REDIS_RESTARTS) {
          await pause(700 + Math.random() * 800);
          const replays = readers.map((r) => r.replays);
          await redis.stop();
          await pause(300 + Math.random() * 700);
          await redis.start();
          restarts.push('Redis');
          await recovered(`Redis restart ${i + 1}`, replays);
        }
      }
      await pause(500);
      for (const x of senders) await x.stop();
      for (const x of senders) assert.ok(await x.settle(30_000), 'every send with an unknown outcome is accepted when retried');
      await drain(ledger, readers, 30_000);
    } finally {
      for (const x of senders) await x.stop();
      for (const r of readers) await r.stop();
    }

    const t = tally(ledger, readers);
    const failedSends = senders.reduce((n, x) => n + x.failed, 0);
    const refusedOpens = readers.reduce((n, r) => n + r.refused, 0);
    printRow([
      'PostgreSQL restart',
      'Redis restart',
      'envelopes accepted',
      'deliveries due',
      'lost',
      'duplicated',
      'misrouted',
      'replays from the cursor',
      'sends retried',
      'stream opens refused',
    ]);
    printRow(['---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:']);
    printRow([
      `${PG_RESTARTS} (${immediate} immediate, ${fast} fast)`,
      REDIS_RESTARTS,
      t.accepted,
      t.deliveries,
      t.lost,
      t.duplicated,
      t.misrouted,
      `${t.resumed} of ${t.replays}`,
      failedSends,
      refusedOpens,
    ]);

    assert.equal(restarts.length, PG_RESTARTS + REDIS_RESTARTS);
    assert.deepEqual(
      senders.flatMap((x) => x.errors),
      [],
      'every send was answered 202, 500 internal, or not at all',
    );
    assert.ok(t.accepted > 20 * (restarts.length + 1) || t.accepted > 100, `enough messages under load (${t.accepted})`);
    assert.deepEqual(ledger.missing(readers), [], 'lost: every envelope answered 202 reached every target device');
    for (const r of readers) {
      assert.deepEqual([...r.duplicated], [], `duplicated: nothing acknowledged came back on ${r.device}, nothing came twice on one stream`);
      assert.deepEqual([...r.misrouted], [], `misrouted: only envelopes addressed to ${r.device} reached it`);
      assert.deepEqual([...r.altered], [], `envelopes reached ${r.device} as they were sent`);
      assert.deepEqual(r.resumeGaps, [], `every replay on ${r.device} started at its cursor`);
      assert.deepEqual(r.errors, [], `every acknowledgement and stream open on ${r.device} was answered, refused with 500 internal, or cut`);
    }
    if (REDIS_RESTARTS > 0) assert.ok(t.replays > readers.length, 'streams ended with Redis and were opened again');

    // Everything acknowledged: a stream opened now, on either instance, replays nothing.
    for (const r of readers) {
      const s = await Stream.open(r.c, r.device);
      assert.ok(await s.ready(10_000), 'the stream opens after the restarts');
      const back = s.named('msg').map((e) => e.id!);
      s.close();
      assert.deepEqual(
        back.filter((id) => r.acked.has(id)),
        [],
        `no acknowledged envelope is replayed to ${r.device}`,
      );
    }
  });
});
