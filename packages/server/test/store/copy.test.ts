/**
 * `admin copy-to-postgres`: a SQLite database filled through the real API is copied into an empty
 * PostgreSQL schema, and a server started on the copy answers as the old one did: the same
 * logins, rooms and keys, contacts, devices, push subscriptions, sessions, invites, retired
 * nicks, server secret and VAPID keys, and each device's queue replayed in its order.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ATTACHMENT, type PushPayload } from '@svc/protocol';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { openDatabase } from '../../src/store/sqlite/db.js';
import { copyToPostgres, CopyRefused } from '../../src/store/copy-to-postgres.js';
import type { PushTarget } from '../../src/store/types.js';
import type { Pusher } from '../../src/push/types.js';
import {
  Client,
  Stream,
  addDevice,
  b64,
  ct,
  dmBody,
  id16,
  iv,
  publicKey,
  registerBody,
  rooms,
  signup,
  startServer,
  ulid,
  wk,
  type TestServer,
} from '@svc/testkit/harness';
import { dropSchema, freshSchema, sqlIn, testPgUrl } from '@svc/testkit/postgres';

/** A pusher that records what it was handed instead of sending it. */
function recordingPusher(): Pusher & { sent: PushTarget[] } {
  const sent: PushTarget[] = [];
  return { sent, enqueue: (targets: PushTarget[], _p: PushPayload) => void sent.push(...targets), close: async () => undefined };
}

function admin(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, ['packages/server/dist/src/admin.js', ...args], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
}

const pushBody = () => ({ subscription: { endpoint: 'https://push.example.com/send/1', keys: { p256dh: publicKey(), auth: b64(16) } } });

async function rowCounts(schema: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const t of ['accounts', 'meta', 'sessions', 'devices', 'queue', 'rooms']) {
    out[t] = (await sqlIn<{ n: number }>(schema, `SELECT COUNT(*)::int AS n FROM ${t}`))[0]!.n;
  }
  return out;
}

test('a SQLite database copied into PostgreSQL serves the same accounts, rooms, keys, secrets and queues', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-copy-'));
  const dbPath = join(dir, 'svc.db');
  const schema = await freshSchema();
  let s2: TestServer | null = null;
  try {
    // 1. Fill the SQLite database through the API.
    const sqlite = SqliteStore.open(dbPath);
    const s1 = await startServer({}, { store: sqlite, pusher: recordingPusher() });
    const alice = await signup(s1);
    const bob = await signup(s1);
    const carol = await signup(s1);
    const [a1, a2] = [await addDevice(alice), await addDevice(alice)];
    const b1 = await addDevice(bob);
    await addDevice(carol);
    assert.equal((await alice.post('/api/contacts', { nick: carol.nick })).status, 201);
    assert.equal((await bob.put(`/api/devices/${b1}/push`, pushBody(), { device: b1 })).status, 204);
    const roomId = id16();
    const k1 = id16();
    assert.equal(
      (await alice.post('/api/rooms', { id: roomId, name: 'Copied room', keyId: k1, keys: [wk(alice.nick)] }, { device: a1 })).status,
      201,
    );
    const k2 = id16();
    const members = { add: [bob.nick, carol.nick], remove: [], keyId: k2, keys: [alice.nick, bob.nick, carol.nick].map(wk) };
    assert.equal((await alice.post(`/api/rooms/${roomId}/members`, members)).status, 200);
    const queued: string[] = [];
    for (let i = 0; i < 3; i++) {
      const body = dmBody(bob.nick);
      assert.equal((await alice.post('/api/messages', body, { device: a1 })).status, 202);
      queued.push(body.id);
    }
    const roomMsg = { id: ulid(), to: { room: roomId }, keyId: k2, iv: iv(), ct: ct() };
    assert.equal((await alice.post('/api/messages', roomMsg, { device: a1 })).status, 202);
    queued.push(roomMsg.id);
    const dave = await signup(s1);
    assert.equal((await dave.del('/api/me', { authKey: dave.authKey })).status, 204);
    const inviteCode = 'invite-code-0001';
    await sqlite.createInvite(inviteCode, 1, null, Date.now());
    // A finished attachment of three parts and an upload still under way.
    const file = randomBytes(2 * ATTACHMENT.partBytes + 99);
    const fileId = id16();
    for (let n = 0; n * ATTACHMENT.partBytes < file.length; n++) {
      const data = file.subarray(n * ATTACHMENT.partBytes, (n + 1) * ATTACHMENT.partBytes).toString('base64url');
      assert.equal((await alice.put(`/api/attachments/${fileId}/parts/${n}`, { data })).status, 204);
    }
    const sha256 = createHash('sha256').update(file).digest('base64url');
    const finished = await alice.post(`/api/attachments/${fileId}/finish`, { parts: 3, size: file.length, sha256 });
    assert.equal(finished.status, 201, finished.text);
    const openId = id16();
    assert.equal((await bob.put(`/api/attachments/${openId}/parts/0`, { data: b64(500) })).status, 204);

    const before = {
      config: (await alice.get('/api/config')).json,
      decoyKdf: (await alice.get('/api/kdf?nick=nobody_here')).json,
      login: (await new Client(s1).post('/api/login', { nick: alice.nick, authKey: alice.authKey })).json,
      aliceRooms: await rooms(alice),
      bobRooms: await rooms(bob),
      devices: (await alice.get('/api/devices')).json,
      contacts: (await alice.get('/api/contacts')).json,
      bobContacts: (await bob.get('/api/contacts')).json,
    };
    await s1.close(); // closes the SQLite store too

    // 2. Copy with the admin command; --from defaults to DATABASE_URL.
    const r = admin(['copy-to-postgres', '--to', testPgUrl, '--schema', schema], { DATABASE_URL: `sqlite:${dbPath}` });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /accounts: 4/);
    assert.match(r.stdout, /queue: \d+/);

    // 3. A server on the copy.
    const pusher = recordingPusher();
    s2 = await startServer({ REGISTRATION: 'invite' }, { store: await PostgresStore.open(testPgUrl, { schema }), pusher });
    const on2 = (c: Client) => Object.assign(new Client(s2!), { cookie: c.cookie, nick: c.nick, authKey: c.authKey });
    const [alice2, bob2, carol2] = [on2(alice), on2(bob), on2(carol)];

    const config = (await alice2.get('/api/config')).json;
    assert.equal(config.vapidPublicKey, before.config.vapidPublicKey, 'the VAPID keys were copied');
    assert.deepEqual((await alice2.get('/api/kdf?nick=nobody_here')).json, before.decoyKdf, 'the server secret was copied');
    const login = await new Client(s2).post('/api/login', { nick: alice.nick, authKey: alice.authKey });
    assert.equal(login.status, 200, login.text);
    assert.deepEqual(login.json, before.login, 'same kdf, public key and encrypted key');
    assert.equal((await new Client(s2).post('/api/login', { nick: alice.nick, authKey: b64(32) })).status, 401);
    assert.equal((await bob2.get('/api/me')).status, 200, 'sessions were copied');
    assert.deepEqual(await rooms(alice2), before.aliceRooms);
    assert.deepEqual(await rooms(bob2), before.bobRooms);
    assert.deepEqual((await alice2.get('/api/devices')).json, before.devices);
    assert.deepEqual((await alice2.get('/api/contacts')).json, before.contacts);
    assert.deepEqual((await bob2.get('/api/contacts')).json, before.bobContacts);
    assert.equal(
      (await new Client(s2).post('/api/register', { ...registerBody(dave.nick), invite: inviteCode })).status,
      409,
      'a retired nick stays retired',
    );
    const eve = await new Client(s2).post('/api/register', { ...registerBody('eve_copied'), invite: inviteCode });
    assert.equal(eve.status, 201, `the invite was copied: ${eve.text}`);

    // Attachments came along: the finished one downloads byte for byte and finishes again the
    // same; the upload under way goes on where it was.
    const got = await carol2.get(`/api/attachments/${fileId}`);
    assert.equal(got.status, 200, got.text);
    assert.ok(got.bytes.equals(file));
    const refinish = await alice2.post(`/api/attachments/${fileId}/finish`, { parts: 3, size: file.length, sha256 });
    assert.deepEqual([refinish.status, refinish.json], [200, finished.json]);
    assert.equal((await bob2.put(`/api/attachments/${openId}/parts/1`, { data: b64(5) })).status, 204);
    assert.equal((await alice2.put(`/api/attachments/${openId}/parts/2`, { data: b64(5) })).status, 409);

    // The queue replays in its order; the push subscription is there once the device reconnects.
    const stream = await Stream.open(bob2, b1);
    assert.ok(await stream.ready());
    assert.deepEqual(
      stream.named('msg').map((e) => e.id),
      queued,
    );
    stream.close();
    await Stream.settle();
    const after = dmBody(bob.nick);
    assert.equal((await alice2.post('/api/messages', after, { device: a1 })).status, 202);
    await Stream.settle();
    assert.deepEqual(
      pusher.sent.map((t) => [t.deviceId, t.endpoint]),
      [[b1, 'https://push.example.com/send/1']],
    );

    // New rows number after the copied ones: a new device lists last, a new member joins last.
    const a3 = await addDevice(alice2);
    assert.deepEqual(
      (await alice2.get('/api/devices')).json.map((d: { id: string }) => d.id),
      [a1, a2, a3],
    );
    const replay = await Stream.open(bob2, b1);
    assert.ok(await replay.ready());
    assert.deepEqual(
      replay.named('msg').map((e) => e.id),
      [...queued, after.id],
      'new entries queue after the copied ones',
    );
    replay.close();
    // Key ids the room used before the copy stay used; a fresh one rotates.
    const reuse = { add: [], remove: [carol.nick], keyId: k2, keys: [alice.nick, bob.nick].map(wk) };
    assert.equal((await alice2.post(`/api/rooms/${roomId}/members`, reuse)).status, 409);
    const rotate = { ...reuse, keyId: id16() };
    assert.equal((await alice2.post(`/api/rooms/${roomId}/members`, rotate)).status, 200);
    assert.deepEqual(await rooms(carol2), []);

    // 4. A second copy into the now non-empty target is refused and changes nothing.
    const counts = await rowCounts(schema);
    await assert.rejects(copyToPostgres(dbPath, testPgUrl, { schema }), (e: unknown) => e instanceof CopyRefused && /not empty/.test(e.message));
    const again = admin(['copy-to-postgres', '--from', `sqlite:${dbPath}`, '--to', testPgUrl, '--schema', schema]);
    assert.equal(again.status, 1);
    assert.match(again.stderr, /not empty/);
    assert.deepEqual(await rowCounts(schema), counts);
  } finally {
    await s2?.close();
    rmSync(dir, { recursive: true, force: true });
    await dropSchema(schema);
  }
});

test('a target holding any row, even an invite alone, is refused as not empty and keeps what it had', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-copy-'));
  const schema = await freshSchema();
  try {
    const path = join(dir, 'svc.db');
    openDatabase(path).close();
    const target = await PostgresStore.open(testPgUrl, { schema });
    await target.createInvite('only-an-invite', 1, null, Date.now());
    await target.close();
    await assert.rejects(copyToPostgres(path, testPgUrl, { schema }), (e: unknown) => e instanceof CopyRefused && /not empty/.test(e.message));
    assert.deepEqual(await sqlIn(schema, 'SELECT code FROM invites'), [{ code: 'only-an-invite' }]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await dropSchema(schema);
  }
});

test('a SQLite file of another schema version is refused and the target stays empty', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-copy-'));
  const schema = await freshSchema();
  try {
    const path = join(dir, 'svc.db');
    const db = openDatabase(path);
    db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(999, 'future', Date.now());
    db.close();
    await assert.rejects(
      copyToPostgres(path, testPgUrl, { schema }),
      (e: unknown) => e instanceof CopyRefused && /schema version 999/.test(e.message),
    );
    assert.deepEqual(
      await sqlIn(schema, "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'accounts'", [schema]),
      [],
    );
    const missing = admin(['copy-to-postgres', '--from', `sqlite:${join(dir, 'none.db')}`, '--to', testPgUrl, '--schema', schema]);
    assert.equal(missing.status, 1);
    assert.match(missing.stderr, /no SQLite database/);
    const bad = admin(['copy-to-postgres', '--from', `sqlite:${path}`]);
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /usage/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await dropSchema(schema);
  }
});
