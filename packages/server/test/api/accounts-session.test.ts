/**
 * Accounts, part 2 (docs/API.md): login, the session cookie and its storage, logout, me,
 * password change, account deletion.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync, existsSync } from 'node:fs';
import { TEST_MODE } from '@svc/testkit/modes';
import {
  assertError,
  Client,
  Stream,
  addDevice,
  b64,
  ct,
  id16,
  iv,
  kdf,
  nick,
  registerBody,
  signup,
  startServer,
  type Res,
  type TestServer,
} from '@svc/testkit/harness';

/** Cookie attributes of a Set-Cookie header: name=value first, then the attributes as written. */
function parseSetCookie(h: string | null): { name: string; value: string; attrs: string[] } {
  assert.ok(h, 'a Set-Cookie header');
  const [first, ...rest] = h.split(';').map((s) => s.trim());
  const eq = first!.indexOf('=');
  return { name: first!.slice(0, eq), value: first!.slice(eq + 1), attrs: rest.filter((a) => a !== '') };
}

const sortAttrs = (a: string[]) => [...a].sort((x, y) => x.toLowerCase().localeCompare(y.toLowerCase()));
const SESSION_ATTRS = sortAttrs(['Path=/', 'HttpOnly', 'SameSite=Strict', 'Max-Age=2592000']);
const CLEARED_ATTRS = sortAttrs(['Path=/', 'HttpOnly', 'SameSite=Strict', 'Max-Age=0']);

async function login(server: TestServer, n: string, authKey: string): Promise<{ r: Res; c: Client }> {
  const c = new Client(server);
  c.nick = n;
  c.authKey = authKey;
  const r = await c.post('/api/login', { nick: n, authKey });
  return { r, c };
}

function passwordBody(current: string) {
  return { authKey: current, newAuthKey: b64(32), kdf: { ...kdf(), m: 32768, t: 4, p: 2 }, encryptedKey: { iv: iv(), ct: ct(64) } };
}

async function sessionRows(server: TestServer): Promise<{ id: string; nick: string }[]> {
  return (await server.query('SELECT id, nick FROM sessions')) as { id: string; nick: string }[];
}

const sha256hex = (s: string) => createHash('sha256').update(s).digest('hex');

describe('accounts: sessions', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(async () => {
    await server.close();
  });

  describe('login', () => {
    test('login answers 200 {nick, publicKey, encryptedKey, kdf} of the account and a new session cookie', async () => {
      const n = nick();
      const body = { ...registerBody(n), kdf: { ...kdf(), m: 19456, t: 2, p: 3 } };
      const reg = await new Client(server).post('/api/register', body);
      assert.equal(reg.status, 201);
      const { r, c } = await login(server, n, body.authKey);
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.json, { nick: n, publicKey: body.publicKey, encryptedKey: body.encryptedKey, kdf: body.kdf });
      const cookie = parseSetCookie(r.headers.get('set-cookie'));
      assert.equal(cookie.name, 'svc_session');
      assert.notEqual(cookie.value, parseSetCookie(reg.headers.get('set-cookie')).value, 'a new token');
      assert.equal((await c.get('/api/me')).json.nick, n);
    });

    test('login with an unknown nick or a wrong key answers 401 invalid_credentials with identical bodies and no cookie', async () => {
      const alice = await signup(server);
      const wrongKey = await login(server, alice.nick, b64(32));
      const unknown = await login(server, nick('ghost'), alice.authKey);
      assertError(wrongKey.r, 401, 'invalid_credentials');
      assertError(unknown.r, 401, 'invalid_credentials');
      assert.equal(wrongKey.r.text, unknown.r.text);
      assert.equal(wrongKey.r.headers.get('set-cookie'), null);
      assert.equal(unknown.r.headers.get('set-cookie'), null);
      assert.equal(wrongKey.r.headers.get('content-type'), unknown.r.headers.get('content-type'));
    });

    test('login refuses a malformed body: bad_json, then invalid field nick or authKey', async () => {
      const c = new Client(server);
      assertError(await c.post('/api/login', 'not json'), 400, 'bad_json');
      assertError(await c.post('/api/login', { nick: 'A', authKey: b64(32) }), 400, 'invalid', 'nick');
      assertError(await c.post('/api/login', { authKey: b64(32) }), 400, 'invalid', 'nick');
      assertError(await c.post('/api/login', { nick: 'A', authKey: 'x' }), 400, 'invalid', 'nick');
      const alice = await signup(server);
      for (const authKey of [b64(31), b64(33), 'x', 12, undefined, alice.authKey + '=']) {
        assertError(await c.post('/api/login', { nick: alice.nick, authKey }), 400, 'invalid', 'authKey');
      }
      assert.equal(c.cookie, null);
    });
  });

  describe('cookie and session storage', () => {
    test('the session cookie is svc_session=<32 random bytes b64url>; Path=/; HttpOnly; SameSite=Strict; Max-Age=2592000, without Secure for an http origin', async () => {
      const n = nick();
      const body = registerBody(n);
      const reg = await new Client(server).post('/api/register', body);
      const { r } = await login(server, n, body.authKey);
      for (const res of [reg, r]) {
        const c = parseSetCookie(res.headers.get('set-cookie'));
        assert.equal(c.name, 'svc_session');
        assert.match(c.value, /^[A-Za-z0-9_-]{43}$/);
        assert.deepEqual(sortAttrs(c.attrs), SESSION_ATTRS);
      }
    });

    test('only the SHA-256 of the session token is stored, never the token', async () => {
      const n = nick();
      const body = registerBody(n);
      const reg = await new Client(server).post('/api/register', body);
      const { r } = await login(server, n, body.authKey);
      const tokens = [parseSetCookie(reg.headers.get('set-cookie')).value, parseSetCookie(r.headers.get('set-cookie')).value];
      const rows = (await sessionRows(server)).filter((s) => s.nick === n);
      assert.deepEqual(rows.map((s) => s.id).sort(), tokens.map(sha256hex).sort());
      const tables =
        TEST_MODE === 'sqlite'
          ? await server.query("SELECT name FROM sqlite_master WHERE type = 'table'")
          : await server.query('SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema()');
      for (const { name } of tables as { name: string }[]) {
        const dump = JSON.stringify(await server.query(`SELECT * FROM "${name}"`), (_k, v: unknown) =>
          Buffer.isBuffer(v) ? v.toString('latin1') : v,
        );
        for (const t of tokens) assert.ok(!dump.includes(t), `table ${name} holds a token`);
      }
      if (TEST_MODE !== 'sqlite') return;
      for (const file of [server.dbPath, `${server.dbPath}-wal`]) {
        if (!existsSync(file)) continue;
        const bytes = readFileSync(file);
        for (const t of tokens) assert.equal(bytes.includes(Buffer.from(t)), false, `${file} holds a token`);
      }
    });

    test('a cookie that is not a stored session token answers 401 unauthenticated', async () => {
      const c = new Client(server);
      for (const cookie of ['svc_session=' + b64(32), 'svc_session=', 'svc_session=abc', 'other=' + b64(32)]) {
        c.cookie = cookie;
        assertError(await c.get('/api/me'), 401, 'unauthenticated');
      }
    });
  });

  describe('logout and me', () => {
    test('GET /api/me answers {nick, publicKey, encryptedKey, kdf, createdAt}', async () => {
      const n = nick();
      const body = registerBody(n);
      const before = Date.now();
      const c = new Client(server);
      assert.equal((await c.post('/api/register', body)).status, 201);
      const me = await c.get('/api/me');
      assert.equal(me.status, 200);
      assert.deepEqual(Object.keys(me.json).sort(), ['createdAt', 'encryptedKey', 'kdf', 'nick', 'publicKey']);
      assert.deepEqual(
        { ...me.json, createdAt: 0 },
        { nick: n, publicKey: body.publicKey, encryptedKey: body.encryptedKey, kdf: body.kdf, createdAt: 0 },
      );
      assert.ok(Number.isInteger(me.json.createdAt) && me.json.createdAt >= before - 1000 && me.json.createdAt <= Date.now() + 1000);
    });

    test('logout answers 204, clears the cookie with Max-Age=0 and ends the session and its streams', async () => {
      const alice = await signup(server);
      const other = (await login(server, alice.nick, alice.authKey)).c;
      const dev = await addDevice(alice);
      const s = await Stream.open(alice, dev);
      assert.ok(await s.ready());
      const oldCookie = alice.cookie!;
      const r = await alice.post('/api/logout');
      assert.equal(r.status, 204);
      assert.equal(r.text, '');
      const cleared = parseSetCookie(r.headers.get('set-cookie'));
      assert.equal(cleared.name, 'svc_session');
      assert.equal(cleared.value, '');
      assert.deepEqual(sortAttrs(cleared.attrs), CLEARED_ATTRS);
      assert.ok(await s.closedByServer(), 'the stream of the session closed');
      assert.ok(!(await sessionRows(server)).some((x) => x.id === sha256hex(oldCookie.slice('svc_session='.length))), 'session row gone');

      const stale = new Client(server);
      stale.cookie = oldCookie;
      assertError(await stale.get('/api/me'), 401, 'unauthenticated');
      assertError(await stale.post('/api/logout'), 401, 'unauthenticated');
      assert.equal((await Stream.open(stale, dev)).status, 401);
      assert.equal((await other.get('/api/me')).status, 200, 'other sessions of the account stay');
    });
  });

  describe('password change', () => {
    test('password change with a wrong current authKey answers 401 invalid_credentials and changes nothing', async () => {
      const alice = await signup(server);
      const other = (await login(server, alice.nick, alice.authKey)).c;
      const kdfBefore = (await alice.get('/api/me')).json.kdf;
      const body = passwordBody(b64(32));
      assertError(await alice.post('/api/password', body), 401, 'invalid_credentials');
      assert.equal((await other.get('/api/me')).status, 200, 'other session stays');
      assert.equal((await alice.get('/api/me')).status, 200);
      assert.equal((await login(server, alice.nick, alice.authKey)).r.status, 200, 'old key still works');
      assertError((await login(server, alice.nick, body.newAuthKey)).r, 401, 'invalid_credentials');
      assert.deepEqual((await new Client(server).get(`/api/kdf?nick=${alice.nick}`)).json, kdfBefore);
    });

    test('password change refuses malformed fields with 400 invalid and the field name', async () => {
      const alice = await signup(server);
      assertError(await alice.post('/api/password', 'x'), 400, 'bad_json');
      assertError(await alice.post('/api/password', { ...passwordBody(alice.authKey), authKey: 'x' }), 400, 'invalid', 'authKey');
      assertError(await alice.post('/api/password', { ...passwordBody(alice.authKey), newAuthKey: b64(31) }), 400, 'invalid', 'newAuthKey');
      assertError(await alice.post('/api/password', { ...passwordBody(alice.authKey), kdf: { ...kdf(), m: 1024 } }), 400, 'invalid', 'kdf');
      assertError(
        await alice.post('/api/password', { ...passwordBody(alice.authKey), encryptedKey: { iv: iv(), ct: b64(8) } }),
        400,
        'invalid',
        'encryptedKey',
      );
      assert.equal((await login(server, alice.nick, alice.authKey)).r.status, 200, 'old key still works');
    });

    test('password change answers 204, ends every other session and closes its streams, and keeps the calling session', async () => {
      const alice = await signup(server);
      const other = (await login(server, alice.nick, alice.authKey)).c;
      const [d1, d2] = [await addDevice(alice), await addDevice(alice)];
      const mine = await Stream.open(alice, d1);
      const theirs = await Stream.open(other, d2);
      assert.ok(await mine.ready());
      assert.ok(await theirs.ready());
      const body = passwordBody(alice.authKey);
      const r = await alice.post('/api/password', body);
      assert.equal(r.status, 204, r.text);
      assert.equal(r.headers.get('set-cookie'), null, 'the calling session keeps its cookie');
      assert.ok(await theirs.closedByServer(), "the other session's stream closed");
      assertError(await other.get('/api/me'), 401, 'unauthenticated');
      await Stream.settle();
      assert.equal(mine.ended, false, "the calling session's stream stays open");
      mine.close();
      const me = await alice.get('/api/me');
      assert.equal(me.status, 200);
      assert.deepEqual(me.json.kdf, body.kdf);
      assert.deepEqual(me.json.encryptedKey, body.encryptedKey);
      assert.deepEqual((await new Client(server).get(`/api/kdf?nick=${alice.nick}`)).json, body.kdf);
    });

    test('after a password change the new authKey signs in and the old one does not', async () => {
      const alice = await signup(server);
      const body = passwordBody(alice.authKey);
      assert.equal((await alice.post('/api/password', body)).status, 204);
      const fresh = await login(server, alice.nick, body.newAuthKey);
      assert.equal(fresh.r.status, 200);
      assert.deepEqual(fresh.r.json.kdf, body.kdf);
      assert.deepEqual(fresh.r.json.encryptedKey, body.encryptedKey);
      assertError((await login(server, alice.nick, alice.authKey)).r, 401, 'invalid_credentials');
    });
  });

  describe('account deletion', () => {
    test('account deletion with a wrong authKey answers 401 invalid_credentials and deletes nothing', async () => {
      const alice = await signup(server);
      const bob = await signup(server);
      assertError(await alice.del('/api/me', { authKey: b64(32) }), 401, 'invalid_credentials');
      assertError(await alice.del('/api/me', { authKey: 'x' }), 400, 'invalid', 'authKey');
      assertError(await alice.del('/api/me', 'x'), 400, 'bad_json');
      assert.equal((await alice.get('/api/me')).status, 200);
      assert.equal((await bob.get(`/api/users/${alice.nick}`)).status, 200);
    });

    test('account deletion answers 204, clears the cookie and ends every session and its streams', async () => {
      const alice = await signup(server);
      const other = (await login(server, alice.nick, alice.authKey)).c;
      const [d1, d2] = [await addDevice(alice), await addDevice(alice)];
      const s1 = await Stream.open(alice, d1);
      const s2 = await Stream.open(other, d2);
      assert.ok((await s1.ready()) && (await s2.ready()));
      const cookie = alice.cookie;
      const r = await alice.del('/api/me', { authKey: alice.authKey });
      assert.equal(r.status, 204, r.text);
      const cleared = parseSetCookie(r.headers.get('set-cookie'));
      assert.equal(cleared.value, '');
      assert.deepEqual(sortAttrs(cleared.attrs), CLEARED_ATTRS);
      assert.ok(await s1.closedByServer());
      assert.ok(await s2.closedByServer());
      const stale = new Client(server);
      stale.cookie = cookie;
      assertError(await stale.get('/api/me'), 401, 'unauthenticated');
      assertError(await other.get('/api/me'), 401, 'unauthenticated');
      assert.ok(!(await sessionRows(server)).some((x) => x.nick === alice.nick), 'no session rows remain');
      assertError((await login(server, alice.nick, alice.authKey)).r, 401, 'invalid_credentials');
    });

    test("a deleted account's nick is retired: users answers 404 unknown_user, kdf answers the decoy, register answers nick_taken", async () => {
      const n = nick();
      const own = { alg: 'argon2id', salt: b64(16), m: 19456, t: 2, p: 2 };
      const alice = new Client(server);
      const body = { ...registerBody(n), kdf: own };
      assert.equal((await alice.post('/api/register', body)).status, 201);
      const bob = await signup(server);
      assert.equal((await alice.del('/api/me', { authKey: body.authKey })).status, 204);
      assertError(await bob.get(`/api/users/${n}`), 404, 'unknown_user');
      const k1 = await new Client(server).get(`/api/kdf?nick=${n}`);
      assert.equal(k1.status, 200);
      assert.deepEqual({ ...k1.json, salt: '' }, { alg: 'argon2id', salt: '', m: 65536, t: 3, p: 1 });
      assert.notEqual(k1.json.salt, own.salt);
      assert.deepEqual((await new Client(server).get(`/api/kdf?nick=${n}`)).json, k1.json, 'the decoy is stable');
      const again = new Client(server);
      assertError(await again.post('/api/register', registerBody(n)), 409, 'nick_taken');
      assert.equal(again.cookie, null);
      assertError(await bob.post('/api/contacts', { nick: n }), 404, 'unknown_user');
    });

    test('a deleted account disappears from the contacts of others and its devices are gone', async () => {
      const alice = await signup(server);
      const bob = await signup(server);
      const dev = await addDevice(alice);
      assert.equal((await bob.post('/api/contacts', { nick: alice.nick })).status, 201);
      assert.equal((await alice.post('/api/contacts', { nick: bob.nick })).status, 201);
      assert.deepEqual(
        (await bob.get('/api/contacts')).json.map((x: { nick: string }) => x.nick),
        [alice.nick],
      );
      assert.equal((await alice.del('/api/me', { authKey: alice.authKey })).status, 204);
      assert.deepEqual((await bob.get('/api/contacts')).json, []);
      const carol = await signup(server);
      assert.equal((await carol.post('/api/devices', { id: dev })).status, 201, 'the device id is free again');
    });

    test('a deleted account leaves its rooms as by leave: ownership passes to the earliest joined member, an emptied room is deleted', async () => {
      const alice = await signup(server);
      const bob = await signup(server);
      const carol = await signup(server);
      const bobDev = await addDevice(bob);
      const key = (to: string) => ({ to, iv: iv(), ct: ct() });
      const room = id16();
      const created = await alice.post('/api/rooms', { id: room, name: 'team', keyId: id16(), keys: [key(alice.nick)] });
      assert.equal(created.status, 201, created.text);
      const add1 = await alice.post(`/api/rooms/${room}/members`, {
        add: [bob.nick],
        remove: [],
        keyId: id16(),
        keys: [key(alice.nick), key(bob.nick)],
      });
      assert.equal(add1.status, 200, add1.text);
      const add2 = await alice.post(`/api/rooms/${room}/members`, {
        add: [carol.nick],
        remove: [],
        keyId: id16(),
        keys: [key(alice.nick), key(bob.nick), key(carol.nick)],
      });
      assert.equal(add2.status, 200, add2.text);
      const solo = id16();
      assert.equal((await alice.post('/api/rooms', { id: solo, name: 'solo', keyId: id16(), keys: [key(alice.nick)] })).status, 201);

      const s = await Stream.open(bob, bobDev);
      assert.ok(await s.ready());
      assert.equal((await alice.del('/api/me', { authKey: alice.authKey })).status, 204);

      const rooms = (await bob.get('/api/rooms')).json as { id: string; owner: string; members: string[]; needsRekey: boolean }[];
      assert.equal(rooms.length, 1);
      assert.equal(rooms[0]!.id, room);
      assert.equal(rooms[0]!.owner, bob.nick);
      assert.deepEqual([...rooms[0]!.members].sort(), [bob.nick, carol.nick].sort());
      assert.equal(rooms[0]!.needsRekey, true);
      assert.ok(await s.until((ev) => ev.some((e) => e.event === 'room')), 'bob gets a room event');
      const ev = s.named('room')[0]!.json;
      assert.equal(ev.id, room);
      assert.equal(ev.owner, bob.nick);
      assert.equal(ev.needsRekey, true);
      assert.deepEqual(ev.keys, []);
      assert.ok(!ev.members.includes(alice.nick));
      s.close();
      // the room alice was alone in is deleted: its id is free again
      const reuse = await bob.post('/api/rooms', { id: solo, name: 'again', keyId: id16(), keys: [key(bob.nick)] });
      assert.equal(reuse.status, 201, reuse.text);
    });
  });
});

describe('accounts: cookie with an https origin', () => {
  const HTTPS = 'https://svc.test';
  let server: TestServer;
  before(async () => {
    server = await startServer({ ORIGIN: HTTPS });
  });
  after(async () => {
    await server.close();
  });

  test('the session cookie carries Secure when ORIGIN is https, on register, login and logout', async () => {
    const h = { headers: { origin: HTTPS } };
    const n = nick();
    const body = registerBody(n);
    const c = new Client(server);
    const reg = await c.post('/api/register', body, h);
    assert.equal(reg.status, 201, reg.text);
    const log = await new Client(server).post('/api/login', { nick: n, authKey: body.authKey }, h);
    assert.equal(log.status, 200);
    for (const r of [reg, log]) {
      const k = parseSetCookie(r.headers.get('set-cookie'));
      assert.equal(k.name, 'svc_session');
      assert.deepEqual(sortAttrs(k.attrs), sortAttrs([...SESSION_ATTRS, 'Secure']));
    }
    const out = await c.post('/api/logout', undefined, h);
    assert.equal(out.status, 204);
    assert.deepEqual(sortAttrs(parseSetCookie(out.headers.get('set-cookie')).attrs), sortAttrs([...CLEARED_ATTRS, 'Secure']));
    assertError(await new Client(server).post('/api/register', registerBody(nick())), 403, 'bad_origin');
  });
});

describe('accounts: the cookie follows the session', () => {
  const MINUTE = 60_000;

  test("the session cookie is sent again, same token and a fresh Max-Age, whenever the session's use is recorded (at most every 10 minutes): on an answer, an error and an event stream; logout still clears it", async () => {
    let now = Date.now();
    const server = await startServer({}, { now: () => now });
    try {
      const alice = await signup(server);
      const dev = await addDevice(alice);
      const token = alice.cookie!.slice('svc_session='.length);
      const renewed = (r: { headers: Headers | null }) => {
        const c = parseSetCookie(r.headers!.get('set-cookie'));
        assert.equal(c.name, 'svc_session');
        assert.equal(c.value, token, 'the same session, not a new one');
        assert.deepEqual(sortAttrs(c.attrs), SESSION_ATTRS);
      };

      now += 9 * MINUTE;
      const early = await alice.get('/api/me');
      assert.equal(early.status, 200);
      assert.equal(early.headers.get('set-cookie'), null, 'use is recorded at most every 10 minutes, and the cookie with it');

      now += 2 * MINUTE;
      const me = await alice.get('/api/me');
      assert.equal(me.status, 200);
      renewed(me);
      assert.equal((await alice.get('/api/me')).headers.get('set-cookie'), null, 'not again right after');

      now += 11 * MINUTE;
      const refused = await alice.post('/api/ack', { ids: 'nope' }, { device: dev });
      assertError(refused, 400, 'invalid', 'ids');
      renewed(refused);

      now += 11 * MINUTE;
      const s = await Stream.open(alice, dev);
      assert.equal(s.status, 200);
      assert.ok(await s.ready());
      renewed(s);
      s.close();

      now += 11 * MINUTE;
      const out = await alice.post('/api/logout');
      assert.equal(out.status, 204);
      assert.deepEqual(sortAttrs(parseSetCookie(out.headers.get('set-cookie')).attrs), CLEARED_ATTRS, 'one cookie, the cleared one');
      assert.equal(out.headers.get('set-cookie')!.split('svc_session=').length, 2, 'the renewal gives way to the route’s own cookie');
    } finally {
      await server.close();
    }
  });
});
