/**
 * Crashes lose nothing (issue 6, part 2). The service runs as a real child process; while
 * clients send messages, create rooms and acknowledge what they receive, it is killed with
 * SIGKILL at a random moment and started again, five times. Afterwards:
 *   - every envelope answered 202 has reached every one of its target devices;
 *   - no envelope comes back on a stream opened after its acknowledgement was answered 204;
 *   - accounts, sessions, devices, rooms and their keys are intact.
 * On SQLite (a file) and on PostgreSQL (a fresh schema named in DATABASE_URL's `options`).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Stream, addDevice, ct, id16, iv, nick, signup, ulid, wk, type TestServer } from '../harness.js';
import { dropSchema, freshSchema, sqlIn, testPgUrl } from '../store/pg-helpers.js';
import { ChildServer, freePort } from './child-server.js';

const KILLS = 5;

interface Account {
  c: Client;
  devices: string[];
}

/** A device that keeps a stream open, acknowledges what it gets, and reconnects after every crash. */
class Reader {
  received = new Set<string>();
  /** Ids whose ack was answered 204. */
  acked = new Set<string>();
  /** Envelopes that came back on a stream opened after their ack was answered: must stay empty. */
  resurrected: string[] = [];
  private stream: Stream | null = null;
  private stopped = false;
  private loop: Promise<void> | null = null;

  constructor(
    readonly c: Client,
    readonly device: string,
  ) {}

  start(): void {
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const ackedAtOpen = new Set(this.acked);
      const s = await Stream.open(this.c, this.device).catch(() => null);
      if (!s || s.status !== 200) {
        await new Promise((r) => setTimeout(r, 50));
        continue;
      }
      this.stream = s;
      let seen = 0;
      while (!this.stopped && !s.ended) {
        await s.until((ev) => ev.length > seen, 100);
        const fresh = s.events.slice(seen).filter((e) => e.event === 'msg');
        seen = s.events.length;
        const ids = fresh.map((e) => e.id!);
        for (const id of ids) {
          if (ackedAtOpen.has(id)) this.resurrected.push(id);
          this.received.add(id);
        }
        if (ids.length > 0) {
          const r = await this.c.post('/api/ack', { ids }, { device: this.device }).catch(() => null);
          if (r?.status === 204) for (const id of ids) this.acked.add(id);
        }
      }
      s.close();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stream?.close();
    await this.loop;
  }
}

interface Sent {
  id: string;
  targets: string[];
}

/** Sends until told to stop; records what was answered 202, and retries ids whose outcome was lost in a crash. */
class Sender {
  accepted: Sent[] = [];
  /** Sent while the server died: the answer never came, so the outcome is unknown until retried. */
  unknown: { body: Record<string, unknown>; targets: string[] }[] = [];
  stopped = false;

  constructor(
    readonly from: Account,
    readonly make: () => { body: Record<string, unknown>; targets: string[] },
  ) {}

  private async sendOne(body: Record<string, unknown>, targets: string[]): Promise<boolean> {
    const r = await this.from.c.post('/api/messages', body, { device: this.from.devices[0] }).catch(() => null);
    if (r?.status === 202) {
      this.accepted.push({ id: body.id as string, targets });
      return true;
    }
    if (r !== null) throw new Error(`send refused: ${r.status} ${r.text}`);
    this.unknown.push({ body, targets });
    return false;
  }

  async run(): Promise<void> {
    while (!this.stopped) {
      const m = this.make();
      if (!(await this.sendOne(m.body, m.targets))) return;
    }
  }

  /** After a restart: a retry with the same id is answered 202 (the original, or a first acceptance). */
  async retryUnknown(): Promise<void> {
    const pending = this.unknown;
    this.unknown = [];
    for (const u of pending) assert.ok(await this.sendOne(u.body, u.targets), 'a retry after the restart is accepted');
  }
}

async function account(server: TestServer, devices: number): Promise<Account> {
  const c = await signup(server, nick('crash'));
  const ids: string[] = [];
  for (let i = 0; i < devices; i++) ids.push(await addDevice(c));
  return { c, devices: ids };
}

async function crashRun(env: Record<string, string>): Promise<void> {
  const port = await freePort();
  const proc = new ChildServer(port, env);
  await proc.start();
  const server = proc.server;
  const readers: Reader[] = [];
  try {
    const alice = await account(server, 2);
    const bob = await account(server, 2);
    const carol = await account(server, 1);
    const roomId = id16();
    const keyId = id16();
    assert.equal((await alice.c.post('/api/rooms', { id: roomId, name: 'crash room', keyId: id16(), keys: [wk(alice.c.nick)] })).status, 201);
    const members = [alice.c.nick, bob.c.nick, carol.c.nick];
    assert.equal((await alice.c.post(`/api/rooms/${roomId}/members`, { add: [bob.c.nick, carol.c.nick], remove: [], keyId, keys: members.map(wk) })).status, 200);

    // alice → bob (DM): bob's devices and alice's other device. bob → room: every member device but bob's sending one.
    const dm = new Sender(alice, () => ({ body: { id: ulid(), to: { dm: bob.c.nick }, keyId: 'dm', iv: iv(), ct: ct() }, targets: [...bob.devices, alice.devices[1]!] }));
    const room = new Sender(bob, () => ({ body: { id: ulid(), to: { room: roomId }, keyId, iv: iv(), ct: ct() }, targets: [...alice.devices, bob.devices[1]!, ...carol.devices] }));
    for (const [a, d] of [[alice, 0], [alice, 1], [bob, 0], [bob, 1], [carol, 0]] as const) readers.push(new Reader(a.c, a.devices[d]!));
    for (const r of readers) r.start();

    const rooms: { id: string; keyId: string }[] = [];
    for (let k = 0; k < KILLS; k++) {
      dm.stopped = room.stopped = false;
      const loops = [dm.run(), room.run()];
      // Rooms created under load: each one answered 201 must exist after the crashes.
      const roomLoop = (async () => {
        while (!dm.stopped) {
          const rid = id16();
          const kid = id16();
          const r = await carol.c.post('/api/rooms', { id: rid, name: `room ${k}`, keyId: kid, keys: [wk(carol.c.nick)] }).catch(() => null);
          if (r?.status !== 201) return;
          rooms.push({ id: rid, keyId: kid });
        }
      })();
      await new Promise((r) => setTimeout(r, 300 + Math.random() * 700));
      await proc.kill();
      dm.stopped = room.stopped = true;
      await Promise.all([...loops, roomLoop]);
      await proc.start();
      await dm.retryUnknown();
      await room.retryUnknown();
    }

    // Let the readers drain what is still queued, then stop them.
    const all = [...dm.accepted, ...room.accepted];
    assert.ok(all.length > 20, `enough messages under load (${all.length})`);
    const byDevice = new Map(readers.map((r) => [r.device, r]));
    const deadline = Date.now() + 15_000;
    const missing = () => all.flatMap((m) => m.targets.filter((d) => !byDevice.get(d)!.received.has(m.id)).map((d) => `${m.id}→${d}`));
    while (missing().length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    for (const r of readers) await r.stop();

    assert.deepEqual(missing(), [], 'every envelope answered 202 reached every target device');
    for (const r of readers) assert.deepEqual(r.resurrected, [], `nothing acknowledged came back on ${r.device}`);

    // One more crash with everything acknowledged: the queues stay empty, nothing comes back.
    await proc.kill();
    await proc.start();
    for (const r of readers) {
      const s = await Stream.open(r.c, r.device);
      assert.ok(await s.ready(5000), 'the stream opens after the restart');
      const back = s.named('msg').map((e) => e.id!).filter((id) => r.acked.has(id));
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
      assert.ok(r.keys.some((x) => x.keyId === keyId), 'with its key');
    }
    const carolRooms = new Map(((await carol.c.get('/api/rooms')).json as { id: string; keys: { keyId: string }[] }[]).map((r) => [r.id, r]));
    for (const r of rooms) assert.ok(carolRooms.get(r.id)?.keys.some((k) => k.keyId === r.keyId), `room ${r.id} created under load is there with its key`);
  } catch (err) {
    if (proc.stderr) (err as Error).message += `\nserver stderr:\n${proc.stderr}`;
    throw err;
  } finally {
    for (const r of readers) await r.stop();
    await proc.kill();
  }
}

describe('crashes lose nothing', () => {
  test(`SQLite: ${KILLS} SIGKILLs under load lose no accepted envelope, resurrect no acknowledged one, and keep rooms, keys and sessions`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-crash-'));
    try {
      await crashRun({ DATABASE_URL: `sqlite:${join(dir, 'svc.db')}` });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test(`PostgreSQL: ${KILLS} SIGKILLs under load lose no accepted envelope, resurrect no acknowledged one, and keep rooms, keys and sessions`, async () => {
    const schema = await freshSchema();
    try {
      // pg passes the URL's `options` to the server at connection start, so every connection of
      // the child process works in the test's own schema.
      const url = new URL(testPgUrl);
      url.searchParams.set('options', `-c search_path=${schema}`);
      await crashRun({ DATABASE_URL: url.toString() });
      const tables = await sqlIn<{ n: number }>(schema, "SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'envelopes'", [schema]);
      assert.equal(tables[0]!.n, 1, 'the service wrote into the test schema');
    } finally {
      await dropSchema(schema);
    }
  });
});
