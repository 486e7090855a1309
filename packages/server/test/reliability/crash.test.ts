/**
 * Crashes lose nothing (issue 6, part 2). The service runs as a real child process; while
 * clients send messages, create rooms and acknowledge what they receive, it is killed with
 * SIGKILL at a random moment and started again, CRASH_KILLS times (5 in `npm test`, 20 in
 * `npm run soak:crash`). Every envelope is counted at its receivers (delivery-ledger.ts):
 *   - lost: none; every envelope answered 202 has reached every one of its target devices;
 *   - duplicated: none; no envelope comes back on a stream opened after its acknowledgement was
 *     answered 204, and none comes twice on one stream;
 *   - misrouted: none; a device gets only what was addressed to it, as it was sent;
 *   - every replay after a restart starts at the device's cursor (its unacknowledged queue);
 *   - accounts, sessions, devices, rooms and their keys are intact;
 *   - attachment uploads cut by a crash resume, and finished ones download byte for byte.
 * On SQLite (a file) and on PostgreSQL (a fresh schema named in DATABASE_URL's `options`). Each
 * run prints its row of docs/RELIABILITY.md's crash table.
 */
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, ORIGIN, Stream, TEST_RATES, addDevice, ct, id16, iv, nick, signup, ulid, wk, type TestServer } from '@svc/testkit/harness';
import { Ledger, Reader, Sender, drain, printRow, tally } from './delivery-ledger.js';
import { dropSchema, freshSchema, sqlIn, testPgUrl } from '@svc/testkit/postgres';
import { startChildOnFreePort } from '@svc/testkit/child';
import { Uploader, partsOf } from './attachment-uploads.js';

/** SIGKILLs per store: CRASH_KILLS (`npm run soak:crash` sets 20); a few for `npm test`. */
const KILLS = Number(process.env.CRASH_KILLS || 5);
if (!Number.isInteger(KILLS) || KILLS < 1) throw new Error('CRASH_KILLS must be a whole number of at least 1');

interface Account {
  c: Client;
  devices: string[];
}

async function account(server: TestServer, devices: number): Promise<Account> {
  const c = await signup(server, nick('crash'));
  const ids: string[] = [];
  for (let i = 0; i < devices; i++) ids.push(await addDevice(c));
  return { c, devices: ids };
}

async function crashRun(store: string, env: Record<string, string>): Promise<void> {
  const proc = await startChildOnFreePort((port) => ({
    env: { ...TEST_RATES, PORT: String(port), HOST: '127.0.0.1', ORIGIN, LOG_LEVEL: 'warn', ...env },
    log: false,
  }));
  const server = { url: proc.url } as TestServer;
  const ledger = new Ledger();
  const readers: Reader[] = [];
  try {
    const alice = await account(server, 2);
    const bob = await account(server, 2);
    const carol = await account(server, 1);
    const roomId = id16();
    const keyId = id16();
    assert.equal((await alice.c.post('/api/rooms', { id: roomId, name: 'crash room', keyId: id16(), keys: [wk(alice.c.nick)] })).status, 201);
    const members = [alice.c.nick, bob.c.nick, carol.c.nick];
    assert.equal(
      (await alice.c.post(`/api/rooms/${roomId}/members`, { add: [bob.c.nick, carol.c.nick], remove: [], keyId, keys: members.map(wk) })).status,
      200,
    );

    // alice → bob (DM): bob's devices and alice's other device. bob → room: every member device but bob's sending one.
    const dm = new Sender(alice.c, alice.devices[0]!, ledger, () => ({
      body: { id: ulid(), to: { dm: bob.c.nick }, keyId: 'dm', iv: iv(), ct: ct() },
      targets: [...bob.devices, alice.devices[1]!],
    }));
    const room = new Sender(bob.c, bob.devices[0]!, ledger, () => ({
      body: { id: ulid(), to: { room: roomId }, keyId, iv: iv(), ct: ct() },
      targets: [...alice.devices, bob.devices[1]!, ...carol.devices],
    }));
    // carol → alice (DM), concurrently: alice's devices (carol has no other device).
    const dm2 = new Sender(carol.c, carol.devices[0]!, ledger, () => ({
      body: { id: ulid(), to: { dm: alice.c.nick }, keyId: 'dm', iv: iv(), ct: ct() },
      targets: [...alice.devices],
    }));
    const senders = [dm, room, dm2];
    for (const [a, d] of [
      [alice, 0],
      [alice, 1],
      [bob, 0],
      [bob, 1],
      [carol, 0],
    ] as const)
      readers.push(new Reader(a.c, a.devices[d]!, ledger));
    for (const r of readers) r.start();

    const rooms: { id: string; keyId: string }[] = [];
    for (let k = 0; k < KILLS; k++) {
      for (const x of senders) x.start();
      // Rooms created under load: each one answered 201 must exist after the crashes.
      let creating = true;
      const roomLoop = (async () => {
        while (creating) {
          const rid = id16();
          const kid = id16();
          const r = await carol.c.post('/api/rooms', { id: rid, name: `room ${k}`, keyId: kid, keys: [wk(carol.c.nick)] }).catch(() => null);
          if (r?.status !== 201) return;
          rooms.push({ id: rid, keyId: kid });
        }
      })();
      await new Promise((r) => setTimeout(r, 300 + Math.random() * 700));
      await proc.kill();
      creating = false;
      await Promise.all([...senders.map((x) => x.stop()), roomLoop]);
      await proc.start();
      // A send whose answer was lost in the crash is retried with its id: answered 202 (the original, or a first acceptance).
      for (const x of senders) assert.ok(await x.settle(15_000), 'a retry after the restart is accepted');
    }

    assert.deepEqual(
      senders.flatMap((x) => x.errors),
      [],
      'every send was answered 202, or not at all while the service was down',
    );
    assert.ok(ledger.accepted.length > 20, `enough messages under load (${ledger.accepted.length})`);
    // Let the readers drain what is still queued, then stop them.
    await drain(ledger, readers, 15_000);
    for (const r of readers) await r.stop();
    const t = tally(ledger, readers);
    printRow([store, KILLS, t.accepted, t.deliveries, t.lost, t.duplicated, t.misrouted, `${t.resumed} of ${t.replays}`]);

    assert.deepEqual(ledger.missing(readers), [], 'lost: every envelope answered 202 reached every target device');
    for (const r of readers) {
      assert.deepEqual([...r.duplicated], [], `duplicated: nothing acknowledged came back on ${r.device}, nothing came twice on one stream`);
      assert.deepEqual([...r.misrouted], [], `misrouted: only envelopes addressed to ${r.device} reached it`);
      assert.deepEqual([...r.altered], [], `envelopes reached ${r.device} as they were sent`);
      assert.deepEqual(r.resumeGaps, [], `every replay on ${r.device} started at its cursor`);
      assert.deepEqual(r.errors, [], `every acknowledgement on ${r.device} was answered 204, or not at all while the service was down`);
    }

    // One more crash with everything acknowledged: the queues stay empty, nothing comes back.
    await proc.kill();
    await proc.start();
    for (const r of readers) {
      const s = await Stream.open(r.c, r.device);
      assert.ok(await s.ready(5000), 'the stream opens after the restart');
      const back = s
        .named('msg')
        .map((e) => e.id!)
        .filter((id) => r.acked.has(id));
      s.close();
      assert.deepEqual(back, [], `no acknowledged envelope is replayed to ${r.device}`);
    }

    // Sessions, devices, rooms and keys survived every crash.
    for (const a of [alice, bob, carol]) {
      const me = await a.c.get('/api/me');
      assert.equal(me.status, 200, 'the session cookie still signs in');
      assert.equal(me.json.nick, a.c.nick);
      const devs = await a.c.get('/api/devices');
      assert.deepEqual((devs.json as { id: string }[]).map((d) => d.id).sort(), [...a.devices].sort());
      const list = (await a.c.get('/api/rooms')).json as { id: string; members: string[]; keys: { keyId: string }[] }[];
      const r = list.find((x) => x.id === roomId);
      assert.ok(r, 'the shared room is there');
      assert.deepEqual([...r.members].sort(), [...members].sort());
      assert.ok(
        r.keys.some((x) => x.keyId === keyId),
        'with its key',
      );
    }
    const carolRooms = new Map(((await carol.c.get('/api/rooms')).json as { id: string; keys: { keyId: string }[] }[]).map((r) => [r.id, r]));
    for (const r of rooms)
      assert.ok(
        carolRooms.get(r.id)?.keys.some((k) => k.keyId === r.keyId),
        `room ${r.id} created under load is there with its key`,
      );
  } catch (err) {
    if (proc.output()) (err as Error).message += `\nserver stderr:\n${proc.output().slice(-20_000)}`;
    throw err;
  } finally {
    for (const r of readers) await r.stop();
    await proc.kill();
  }
}

/**
 * Attachment uploads under SIGKILL: several accounts upload files in parts and finish them, back
 * to back, while the service is killed and started again. Every attachment whose finish was
 * answered downloads byte for byte; every upload a crash cut resumes with only the parts that were
 * not answered 204 (those that were are kept), finishes, and downloads byte for byte.
 */
async function attachmentCrashRun(store: string, env: Record<string, string>): Promise<void> {
  const proc = await startChildOnFreePort((port) => ({
    env: { ...TEST_RATES, PORT: String(port), HOST: '127.0.0.1', ORIGIN, LOG_LEVEL: 'warn', LIMIT_UPLOAD_BYTES_PER_MIN: String(1024 ** 3), ...env },
    log: false,
  }));
  const server = { url: proc.url } as TestServer;
  try {
    const uploaders: Uploader[] = [];
    for (let i = 0; i < 3; i++) uploaders.push(new Uploader(await signup(server, nick('upload'))));
    for (let k = 0; k < KILLS; k++) {
      for (const u of uploaders) u.start();
      await new Promise((r) => setTimeout(r, 200 + Math.random() * 500));
      await proc.kill();
      await Promise.all(uploaders.map((u) => u.stop()));
      await proc.start();
    }
    assert.deepEqual(
      uploaders.flatMap((u) => u.errors),
      [],
      'every part and finish was answered with success, or not at all while the service was down',
    );
    const interrupted = uploaders.flatMap((u) => u.interrupted.map((x) => ({ u, x })));
    assert.equal(interrupted.length, KILLS * uploaders.length, 'every SIGKILL cut an upload of each account');
    const finished = uploaders.flatMap((u) => u.finished.map((x) => ({ u, x })));
    assert.ok(finished.length >= KILLS, `uploads finished between the crashes (${finished.length})`);

    for (const { u, x } of finished) {
      const r = await u.c.get(`/api/attachments/${x.id}`);
      assert.equal(r.status, 200, `finished ${x.id} is there after the crashes: ${r.text}`);
      assert.ok(r.bytes.equals(x.file), `finished ${x.id} downloads byte for byte`);
    }
    let kept = 0;
    let resent = 0;
    for (const { u, x } of interrupted) {
      kept += x.stored.size;
      resent += partsOf(x.file) - x.stored.size;
      assert.ok(await u.send(x), `the upload ${x.id} is answered after the restart`);
      assert.deepEqual(u.errors, [], `the upload ${x.id} resumes with the parts not answered and finishes`);
      const r = await u.c.get(`/api/attachments/${x.id}`);
      assert.equal(r.status, 200, `resumed ${x.id} is there: ${r.text}`);
      assert.ok(r.bytes.equals(x.file), `resumed ${x.id} downloads byte for byte`);
    }
    console.log(
      `attachments, ${store}: ${KILLS} SIGKILLs, ${finished.length} finished before a crash and intact, ${interrupted.length} cut and resumed ` +
        `(${kept} parts answered before the crash kept, ${resent} sent again)`,
    );
  } catch (err) {
    if (proc.output()) (err as Error).message += `\nserver stderr:\n${proc.output().slice(-20_000)}`;
    throw err;
  } finally {
    await proc.kill();
  }
}

describe('crashes lose nothing', () => {
  before(() => {
    printRow(['store', 'SIGKILLs', 'envelopes accepted', 'deliveries due', 'lost', 'duplicated', 'misrouted', 'replays from the cursor']);
    printRow(['---', '---:', '---:', '---:', '---:', '---:', '---:', '---:']);
  });

  test(`SQLite: ${KILLS} SIGKILLs under load lose, duplicate and misroute no envelope, replay from the cursor, and keep rooms, keys and sessions`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-crash-'));
    try {
      await crashRun('SQLite', { DATABASE_URL: `sqlite:${join(dir, 'svc.db')}` });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test(`SQLite: ${KILLS} SIGKILLs during attachment uploads lose no finished attachment and leave every cut upload resumable`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-crash-'));
    try {
      await attachmentCrashRun('SQLite', { DATABASE_URL: `sqlite:${join(dir, 'svc.db')}` });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test(`PostgreSQL: ${KILLS} SIGKILLs under load lose, duplicate and misroute no envelope, replay from the cursor, and keep rooms, keys and sessions`, async () => {
    const schema = await freshSchema();
    try {
      // pg passes the URL's `options` to the server at connection start, so every connection of
      // the child process works in the test's own schema.
      const url = new URL(testPgUrl);
      url.searchParams.set('options', `-c search_path=${schema}`);
      await crashRun('PostgreSQL', { DATABASE_URL: url.toString() });
      const tables = await sqlIn<{ n: number }>(
        schema,
        "SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'envelopes'",
        [schema],
      );
      assert.equal(tables[0]!.n, 1, 'the service wrote into the test schema');
    } finally {
      await dropSchema(schema);
    }
  });

  test(`PostgreSQL: ${KILLS} SIGKILLs during attachment uploads lose no finished attachment and leave every cut upload resumable`, async () => {
    const schema = await freshSchema();
    try {
      const url = new URL(testPgUrl);
      url.searchParams.set('options', `-c search_path=${schema}`);
      await attachmentCrashRun('PostgreSQL', { DATABASE_URL: url.toString() });
    } finally {
      await dropSchema(schema);
    }
  });
});
