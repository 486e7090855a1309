/**
 * Accounts, part 1 (docs/API.md and its value formats): config, kdf and its decoy, register
 * with the order of its checks and invites, nick_taken, users/{nick}.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createECDH, createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeB64url, encodeB64url } from '@svc/protocol';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { assertError, Client, b64, kdf, nick, publicKey, registerBody, signup, startServer, type Res, type TestServer } from '@svc/testkit/harness';

const DEFAULT_KDF = { alg: 'argon2id', m: 65536, t: 3, p: 1 };

/** 65 bytes starting with 0x04 whose (x, y) is not on P-256. */
function offCurveKey(): string {
  const e = createECDH('prime256v1');
  e.generateKeys();
  const bytes = Buffer.from(e.getPublicKey());
  bytes[64] = bytes[64]! ^ 0x01;
  return encodeB64url(bytes);
}

function compressedKey(): string {
  const e = createECDH('prime256v1');
  e.generateKeys();
  return encodeB64url(e.getPublicKey(null, 'compressed'));
}

/** Registers with a fresh client (so no cookie is carried over). */
async function register(server: TestServer, body: unknown): Promise<{ r: Res; c: Client }> {
  const c = new Client(server);
  const r = await c.post('/api/register', body);
  return { r, c };
}

describe('accounts: config, kdf, register, users (open registration)', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(async () => {
    await server.close();
  });

  async function nickIsFree(n: string): Promise<boolean> {
    return (await register(server, registerBody(n))).r.status === 201;
  }

  test('GET /api/config is public and answers {revision, commitTime, registration, vapidPublicKey, attachments}', async () => {
    const r = await new Client(server).get('/api/config', { noOrigin: true });
    assert.equal(r.status, 200);
    assert.deepEqual(Object.keys(r.json).sort(), ['attachments', 'commitTime', 'registration', 'revision', 'vapidPublicKey']);
    assert.equal(typeof r.json.attachments.maxBytes, 'number');
    assert.equal(r.json.revision, 'test');
    assert.equal(r.json.commitTime, 1700000000000);
    assert.equal(r.json.registration, 'open');
    const vapid = decodeB64url(r.json.vapidPublicKey);
    assert.ok(vapid && vapid.length === 65 && vapid[0] === 4, 'vapidPublicKey is b64url of an uncompressed P-256 point');
    assert.deepEqual((await new Client(server).get('/api/config')).json, r.json, 'the same on every call');
  });

  test('the VAPID key pair is made once and kept in the database: every instance serves the same public key, and so does a restart', async () => {
    const served = await Promise.all(
      server.urls.map(async (u) => ((await (await fetch(`${u}/api/config`)).json()) as { vapidPublicKey: string }).vapidPublicKey),
    );
    assert.equal(new Set(served).size, 1, `one key for ${served.length} instance(s)`);
    const [row] = (await server.query("SELECT value FROM meta WHERE key = 'vapid_keys'")) as { value: string }[];
    assert.equal((JSON.parse(row!.value) as { publicKey: string }).publicKey, served[0], 'the kept pair is the served one');

    const path = join(mkdtempSync(join(tmpdir(), 'svc-vapid-kept-')), 'svc.db');
    const keyAfterStart = async () => {
      const s = await startServer({}, { store: SqliteStore.open(path) });
      try {
        return (await new Client(s).get('/api/config')).json.vapidPublicKey as string;
      } finally {
        await s.close();
      }
    };
    const first = await keyAfterStart();
    assert.equal(await keyAfterStart(), first, 'the same key after a restart on the same database');
  });

  test('GET /api/kdf answers the kdf an account registered with', async () => {
    const n = nick();
    const own = { alg: 'argon2id', salt: b64(16), m: 19456, t: 2, p: 4 };
    const { r } = await register(server, { ...registerBody(n), kdf: own });
    assert.equal(r.status, 201, r.text);
    const k = await new Client(server).get(`/api/kdf?nick=${n}`, { noOrigin: true });
    assert.equal(k.status, 200);
    assert.deepEqual(k.json, own);
  });

  test('GET /api/kdf answers a stable decoy with default parameters for a nick without an account', async () => {
    const c = new Client(server);
    const a = nick('nobody');
    const b = nick('nobody');
    const first = await c.get(`/api/kdf?nick=${a}`);
    assert.equal(first.status, 200);
    assert.deepEqual(Object.keys(first.json).sort(), ['alg', 'm', 'p', 'salt', 't']);
    assert.deepEqual({ ...first.json, salt: undefined }, { ...DEFAULT_KDF, salt: undefined });
    const salt = decodeB64url(first.json.salt);
    assert.ok(salt && salt.length === 16 && encodeB64url(salt) === first.json.salt, 'salt is b64url of 16 bytes');
    for (let i = 0; i < 3; i++) assert.deepEqual((await c.get(`/api/kdf?nick=${a}`)).json, first.json, 'same on every call');
    const other = await c.get(`/api/kdf?nick=${b}`);
    assert.equal(other.status, 200);
    assert.notEqual(other.json.salt, first.json.salt, 'differs between nicks');
    // same shape as a real answer
    const real = await signup(server);
    const rk = await c.get(`/api/kdf?nick=${real.nick}`);
    assert.deepEqual(Object.keys(rk.json).sort(), Object.keys(first.json).sort());
    assert.deepEqual(Object.keys(rk.json), Object.keys(first.json), 'same field order');
  });

  test('the decoy salt is the first 16 bytes of HMAC-SHA256(server secret, "kdf\\0" + nick), the secret kept in the database', async () => {
    const [row] = (await server.query("SELECT value FROM meta WHERE key = 'server_secret'")) as { value: string }[];
    assert.ok(row, 'the server secret is kept in the database');
    const secret = Buffer.from(row.value, 'base64url');
    assert.equal(secret.length, 32, 'a 32-byte secret');
    for (const n of [nick('nobody'), nick('ghost')]) {
      const expected = createHmac('sha256', secret).update(`kdf\0${n}`).digest().subarray(0, 16).toString('base64url');
      assert.equal((await new Client(server).get(`/api/kdf?nick=${n}`)).json.salt, expected, n);
    }
  });

  test('GET /api/kdf refuses a nick that breaks the nick rule with 400 invalid field nick', async () => {
    const c = new Client(server);
    for (const q of ['?nick=A', '?nick=a', '?nick=ab-c', '?nick=Abc', `?nick=${'a'.repeat(33)}`, '?nick=', '', '?nick=ab%20c', '?other=abc']) {
      assertError(await c.get(`/api/kdf${q}`), 400, 'invalid', 'nick');
    }
    assert.equal((await c.get(`/api/kdf?nick=${'a'.repeat(32)}`)).status, 200);
    assert.equal((await c.get('/api/kdf?nick=a_1')).status, 200);
  });

  test('register answers 201 {nick} and a session cookie that signs the account in', async () => {
    const n = nick();
    const body = registerBody(n);
    const { r, c } = await register(server, body);
    assert.equal(r.status, 201, r.text);
    assert.deepEqual(r.json, { nick: n });
    assert.match(r.headers.get('set-cookie') ?? '', /^svc_session=[A-Za-z0-9_-]{43};/);
    const me = await c.get('/api/me');
    assert.equal(me.status, 200);
    assert.equal(me.json.nick, n);
    assert.equal(me.json.publicKey, body.publicKey);
    assert.deepEqual(me.json.encryptedKey, body.encryptedKey);
    assert.deepEqual(me.json.kdf, body.kdf);
  });

  test('register accepts nicks of 2 and 32 characters of a-z, 0-9 and _', async () => {
    for (const n of ['a' + String(process.pid % 10), `z_${process.pid}_`.padEnd(32, '9')]) {
      const { r } = await register(server, registerBody(n));
      assert.equal(r.status, 201, `${n}: ${r.text}`);
    }
  });

  test('register refuses a body that is not JSON with bad_json before checking the nick', async () => {
    assertError((await register(server, 'not json')).r, 400, 'bad_json');
    assertError((await register(server, '{"nick":"A"')).r, 400, 'bad_json');
    const c = new Client(server);
    assertError(await c.post('/api/register', JSON.stringify(registerBody(nick())), { headers: { 'content-type': 'text/plain' } }), 400, 'bad_json');
    assert.equal(c.cookie, null);
  });

  test('register refuses an invalid nick with invalid_nick before checking other fields', async () => {
    for (const n of ['A', 'a', 'Abc', 'ab-c', 'ab c', 'a'.repeat(33), '', 'ab.c', 'äbc', 12345, null, undefined]) {
      const body = { nick: n, authKey: 'x', kdf: {}, publicKey: 'x', encryptedKey: {} };
      const { r, c } = await register(server, body);
      assertError(r, 400, 'invalid_nick');
      assert.equal(c.cookie, null);
    }
    assertError((await register(server, [])).r, 400, 'invalid_nick');
    assertError((await register(server, {})).r, 400, 'invalid_nick');
  });

  test('register refuses a malformed authKey with 400 invalid field authKey and creates nothing', async () => {
    const n = nick();
    const bad = [b64(31), b64(33), b64(32) + '=', encodeB64url(randomBytes(32)).replace(/[-_]/g, '+').replace(/^./, '+'), '', 42, null, undefined];
    for (const authKey of bad) assertError((await register(server, { ...registerBody(n), authKey })).r, 400, 'invalid', 'authKey');
    assert.ok(await nickIsFree(n));
  });

  test('register refuses a kdf outside the KDF bounds with 400 invalid field kdf and creates nothing', async () => {
    const n = nick();
    const base = kdf();
    const bad: unknown[] = [
      undefined,
      null,
      'argon2id',
      { ...base, alg: 'argon2i' },
      { ...base, alg: 'scrypt' },
      { ...base, salt: b64(15) },
      { ...base, salt: b64(17) },
      { ...base, salt: 42 },
      { ...base, m: 19455 },
      { ...base, m: 1048577 },
      { ...base, m: 65536.5 },
      { ...base, m: '65536' },
      { ...base, t: 1 },
      { ...base, t: 17 },
      { ...base, p: 0 },
      { ...base, p: 5 },
      { alg: base.alg, salt: base.salt, m: base.m, t: base.t },
    ];
    for (const k of bad) assertError((await register(server, { ...registerBody(n), kdf: k })).r, 400, 'invalid', 'kdf');
    assert.ok(await nickIsFree(n));
  });

  test('register accepts kdf parameters at the bounds m 19456..1048576, t 2..16, p 1..4', async () => {
    for (const k of [
      { m: 19456, t: 2, p: 1 },
      { m: 1048576, t: 16, p: 4 },
    ]) {
      const n = nick();
      const own = { alg: 'argon2id', salt: b64(16), ...k };
      const { r } = await register(server, { ...registerBody(n), kdf: own });
      assert.equal(r.status, 201, r.text);
      assert.deepEqual((await new Client(server).get(`/api/kdf?nick=${n}`)).json, own);
    }
  });

  test('register refuses a publicKey not on P-256 or of the wrong length with 400 invalid field publicKey', async () => {
    const n = nick();
    const wrongPrefix = Buffer.from(decodeB64url(publicKey())!);
    wrongPrefix[0] = 0x05;
    const bad = [
      offCurveKey(),
      compressedKey(),
      b64(64),
      b64(66),
      encodeB64url(Buffer.alloc(65)),
      encodeB64url(wrongPrefix),
      publicKey() + '=',
      '',
      7,
    ];
    for (const pk of bad) assertError((await register(server, { ...registerBody(n), publicKey: pk })).r, 400, 'invalid', 'publicKey');
    assert.ok(await nickIsFree(n));
  });

  test('register refuses a malformed encryptedKey with 400 invalid field encryptedKey', async () => {
    const n = nick();
    const good = registerBody(n).encryptedKey;
    const bad: unknown[] = [
      undefined,
      'x',
      { iv: good.iv },
      { ct: good.ct },
      { ...good, iv: b64(11) },
      { ...good, iv: b64(13) },
      { ...good, ct: b64(15) },
      { ...good, ct: b64(4097) },
      { ...good, ct: good.ct + '=' },
    ];
    for (const encryptedKey of bad) assertError((await register(server, { ...registerBody(n), encryptedKey })).r, 400, 'invalid', 'encryptedKey');
    assert.ok(await nickIsFree(n));
    for (const len of [16, 4096]) {
      const { r } = await register(server, { ...registerBody(nick()), encryptedKey: { iv: b64(12), ct: b64(len) } });
      assert.equal(r.status, 201, `ct of ${len} bytes: ${r.text}`);
    }
  });

  test('register refuses a nick that is taken with 409 nick_taken and leaves the account as it was', async () => {
    const alice = await signup(server);
    const { r, c } = await register(server, registerBody(alice.nick));
    assertError(r, 409, 'nick_taken');
    assert.equal(c.cookie, null);
    const login = await new Client(server).post('/api/login', { nick: alice.nick, authKey: alice.authKey });
    assert.equal(login.status, 200, 'the original key still signs in');
  });

  test('register checks field shapes before nick_taken', async () => {
    const alice = await signup(server);
    assertError((await register(server, { ...registerBody(alice.nick), authKey: 'x' })).r, 400, 'invalid', 'authKey');
    assertError((await register(server, { ...registerBody(alice.nick), publicKey: offCurveKey() })).r, 400, 'invalid', 'publicKey');
  });

  test('GET /api/users/{nick} answers {nick, publicKey} of an account', async () => {
    const alice = await signup(server);
    const bodyB = registerBody(nick());
    const { r } = await register(server, bodyB);
    assert.equal(r.status, 201);
    const u = await alice.get(`/api/users/${bodyB.nick}`);
    assert.equal(u.status, 200);
    assert.deepEqual(u.json, { nick: bodyB.nick, publicKey: bodyB.publicKey });
    const self = await alice.get(`/api/users/${alice.nick}`);
    assert.equal(self.status, 200);
    assert.equal(self.json.nick, alice.nick);
  });

  test('GET /api/users/{nick} answers 404 unknown_user for a nick without an account', async () => {
    const alice = await signup(server);
    assertError(await alice.get(`/api/users/${nick('ghost')}`), 404, 'unknown_user');
  });

  test('GET /api/users/{nick} answers 400 invalid field nick when the path is not a nick', async () => {
    const alice = await signup(server);
    for (const p of ['A', 'Abc', 'ab-c', 'a'.repeat(33), 'ab%20c', 'x']) assertError(await alice.get(`/api/users/${p}`), 400, 'invalid', 'nick');
  });

  test('GET /api/users/{nick} needs a session', async () => {
    const alice = await signup(server);
    assertError(await new Client(server).get(`/api/users/${alice.nick}`), 401, 'unauthenticated');
  });
});

describe('accounts: registration by invite (REGISTRATION=invite)', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ REGISTRATION: 'invite' });
  });
  after(async () => {
    await server.close();
  });

  let codeSeq = 0;
  async function invite(uses: number, expiresAt: number | null = null): Promise<string> {
    const code = `inv-${process.pid}-${++codeSeq}-${b64(6)}`;
    await server.app.deps.store.createInvite(code, uses, expiresAt, Date.now());
    return code;
  }
  async function reg(body: unknown): Promise<Res> {
    return (await register(server, body)).r;
  }
  async function nickIsFree(n: string): Promise<boolean> {
    return (await reg({ ...registerBody(n), invite: await invite(1) })).status === 201;
  }

  test('GET /api/config reports registration "invite"', async () => {
    assert.equal((await new Client(server).get('/api/config')).json.registration, 'invite');
  });

  test('register without an invite code answers 403 invite_required and creates nothing', async () => {
    const n = nick();
    assertError(await reg(registerBody(n)), 403, 'invite_required');
    assert.ok(await nickIsFree(n));
  });

  test('register with an unknown invite code answers 403 invalid_invite', async () => {
    const n = nick();
    assertError(await reg({ ...registerBody(n), invite: 'no-such-code' }), 403, 'invalid_invite');
    assert.ok(await nickIsFree(n));
  });

  test('register with an expired invite code answers 403 invalid_invite', async () => {
    const code = await invite(5, Date.now() - 1000);
    const n = nick();
    assertError(await reg({ ...registerBody(n), invite: code }), 403, 'invalid_invite');
    assert.ok(await nickIsFree(n));
    const later = await invite(1, Date.now() + 3_600_000);
    assert.equal((await reg({ ...registerBody(nick()), invite: later })).status, 201, 'a code that has not expired works');
  });

  test('an invite code works for as many registrations as it has uses, then answers 403 invalid_invite', async () => {
    const code = await invite(2);
    assert.equal((await reg({ ...registerBody(nick()), invite: code })).status, 201);
    assert.equal((await reg({ ...registerBody(nick()), invite: code })).status, 201);
    const n = nick();
    assertError(await reg({ ...registerBody(n), invite: code }), 403, 'invalid_invite');
    assert.ok(await nickIsFree(n));
    assertError(await reg({ ...registerBody(nick()), invite: await invite(0) }), 403, 'invalid_invite');
  });

  test('an invite use is consumed only by a successful registration', async () => {
    const code = await invite(1);
    const existing = nick();
    assert.equal((await reg({ ...registerBody(existing), invite: await invite(1) })).status, 201);
    assertError(await reg({ ...registerBody(existing), invite: code }), 409, 'nick_taken');
    assertError(await reg({ ...registerBody(nick()), publicKey: offCurveKey(), invite: code }), 400, 'invalid', 'publicKey');
    assertError(await reg({ ...registerBody('A'), invite: code }), 400, 'invalid_nick');
    assertError(await reg('not json'), 400, 'bad_json');
    const ok = await reg({ ...registerBody(nick()), invite: code });
    assert.equal(ok.status, 201, 'the one use is still there');
    assertError(await reg({ ...registerBody(nick()), invite: code }), 403, 'invalid_invite');
  });

  test('register checks the nick and field shapes before the invite', async () => {
    assertError(await reg({ ...registerBody('A') }), 400, 'invalid_nick');
    assertError(await reg({ ...registerBody(nick()), authKey: 'short' }), 400, 'invalid', 'authKey');
    assertError(await reg({ ...registerBody(nick()), kdf: { ...kdf(), t: 1 }, invite: 'no-such-code' }), 400, 'invalid', 'kdf');
  });

  test('register checks the invite before nick_taken', async () => {
    const existing = nick();
    assert.equal((await reg({ ...registerBody(existing), invite: await invite(1) })).status, 201);
    assertError(await reg(registerBody(existing)), 403, 'invite_required');
    assertError(await reg({ ...registerBody(existing), invite: 'no-such-code' }), 403, 'invalid_invite');
    assertError(await reg({ ...registerBody(existing), invite: await invite(1) }), 409, 'nick_taken');
  });
});
