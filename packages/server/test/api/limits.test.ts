/**
 * Rate limits (docs/API.md, the client IP included; README.md "Configuration"): small values
 * passed through the environment so that each limit is met in a few requests.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  assertError,
  Client,
  Stream,
  addDevice,
  b64,
  dmBody,
  id16,
  iv,
  ct,
  nick,
  registerBody,
  signup,
  startServer,
  type Res,
  type TestServer,
} from '@svc/testkit/harness';

/** 429 rate_limited with Retry-After an integer number of seconds, at least 1 and at most the window. */
function expectLimited(r: Res, windowSeconds: number): void {
  assertError(r, 429, 'rate_limited');
  assert.deepEqual(Object.keys(r.json).sort(), ['error', 'message']);
  const ra = r.headers.get('retry-after') ?? '';
  assert.match(ra, /^[1-9][0-9]*$/, `Retry-After "${ra}"`);
  assert.ok(Number(ra) >= 1 && Number(ra) <= windowSeconds, `Retry-After ${ra} within ${windowSeconds}`);
  assert.equal(r.headers.get('content-type'), 'application/json; charset=utf-8');
}

const ip = (h: string) => ({ headers: { 'x-real-ip': h } });

describe('limits: registration per client IP', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ LIMIT_REGISTER_PER_HOUR: '2' });
  });
  after(async () => {
    await server.close();
  });

  test('registration is limited per client IP and answers 429 rate_limited with Retry-After; the refused attempt creates nothing', async () => {
    const from = ip('203.0.113.10');
    assert.equal((await new Client(server).post('/api/register', registerBody(nick()), from)).status, 201);
    assert.equal((await new Client(server).post('/api/register', registerBody(nick()), from)).status, 201);
    const n = nick();
    const c = new Client(server);
    const r = await c.post('/api/register', registerBody(n), from);
    expectLimited(r, 3600);
    assert.equal(c.cookie, null);
    assert.equal(
      (await new Client(server).post('/api/register', registerBody(n), ip('203.0.113.11'))).status,
      201,
      'the nick was not taken by the refused attempt',
    );
  });

  test('different X-Real-IP values from a loopback peer have separate registration budgets', async () => {
    for (const addr of ['198.51.100.1', '198.51.100.2', '2001:db8::5']) {
      assert.equal((await new Client(server).post('/api/register', registerBody(nick()), ip(addr))).status, 201, addr);
      assert.equal((await new Client(server).post('/api/register', registerBody(nick()), ip(addr))).status, 201, addr);
      expectLimited(await new Client(server).post('/api/register', registerBody(nick()), ip(addr)), 3600);
    }
    // the peer address itself (no X-Real-IP) is yet another budget
    assert.equal((await new Client(server).post('/api/register', registerBody(nick()))).status, 201);
  });

  test('the registration limit is checked before the body is parsed', async () => {
    const from = ip('203.0.113.20');
    assert.equal((await new Client(server).post('/api/register', registerBody(nick()), from)).status, 201);
    assert.equal((await new Client(server).post('/api/register', registerBody(nick()), from)).status, 201);
    expectLimited(await new Client(server).post('/api/register', 'not json', from), 3600);
    expectLimited(await new Client(server).post('/api/register', { nick: 'A' }, from), 3600);
    expectLimited(await new Client(server).post('/api/register', registerBody(nick()), from), 3600);
  });
});

describe('limits: login per (client IP, nick)', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ LIMIT_LOGIN_PER_10MIN: '3' });
  });
  after(async () => {
    await server.close();
  });

  test('login is limited per (IP, nick) and counts failed attempts; 429 rate_limited with Retry-After even for the right key', async () => {
    const alice = await signup(server);
    const from = ip('203.0.113.30');
    for (let i = 0; i < 3; i++)
      assertError(await new Client(server).post('/api/login', { nick: alice.nick, authKey: b64(32) }, from), 401, 'invalid_credentials');
    const c = new Client(server);
    const r = await c.post('/api/login', { nick: alice.nick, authKey: alice.authKey }, from);
    expectLimited(r, 600);
    assert.equal(c.cookie, null, 'no session on a refused login');
  });

  test('the login budget of one (IP, nick) pair leaves other nicks and other IPs alone', async () => {
    const alice = await signup(server);
    const bob = await signup(server);
    const from = ip('203.0.113.31');
    for (let i = 0; i < 3; i++)
      assert.equal((await new Client(server).post('/api/login', { nick: alice.nick, authKey: alice.authKey }, from)).status, 200);
    expectLimited(await new Client(server).post('/api/login', { nick: alice.nick, authKey: alice.authKey }, from), 600);
    assert.equal((await new Client(server).post('/api/login', { nick: bob.nick, authKey: bob.authKey }, from)).status, 200, 'other nick, same IP');
    assert.equal(
      (await new Client(server).post('/api/login', { nick: alice.nick, authKey: alice.authKey }, ip('203.0.113.32'))).status,
      200,
      'same nick, other IP',
    );
  });

  test('login attempts refused for their shape count, and the login limit is checked before shape errors', async () => {
    const alice = await signup(server);
    const from = ip('203.0.113.33');
    for (let i = 0; i < 3; i++) {
      const r = await new Client(server).post('/api/login', { nick: alice.nick, authKey: 'not-a-key' }, from);
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json.error, 'invalid');
    }
    expectLimited(await new Client(server).post('/api/login', { nick: alice.nick, authKey: alice.authKey }, from), 600);
    expectLimited(await new Client(server).post('/api/login', { nick: alice.nick, authKey: 'not-a-key' }, from), 600);
    expectLimited(await new Client(server).post('/api/login', { nick: alice.nick }, from), 600);
  });

  test('login attempts for an unknown nick are limited the same way', async () => {
    const ghost = nick('ghost');
    const from = ip('203.0.113.34');
    for (let i = 0; i < 3; i++)
      assertError(await new Client(server).post('/api/login', { nick: ghost, authKey: b64(32) }, from), 401, 'invalid_credentials');
    expectLimited(await new Client(server).post('/api/login', { nick: ghost, authKey: b64(32) }, from), 600);
  });
});

describe('limits: shared write limit per nick', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ LIMIT_WRITES_PER_MIN: '3' });
  });
  after(async () => {
    await server.close();
  });

  test('routes marked W share one write budget per nick; the next W request answers 429 rate_limited with Retry-After and changes nothing', async () => {
    const alice = await signup(server);
    const bob = await signup(server);
    assert.equal((await alice.post('/api/devices', { id: 'dev-limit-aaaa1' })).status, 201);
    assert.equal((await alice.post('/api/contacts', { nick: bob.nick })).status, 201);
    assert.equal((await alice.del(`/api/contacts/${bob.nick}`)).status, 204);
    const room = id16();
    const r = await alice.post('/api/rooms', { id: room, name: 'r', keyId: id16(), keys: [{ to: alice.nick, iv: iv(), ct: ct() }] });
    expectLimited(r, 60);
    assert.deepEqual((await alice.get('/api/rooms')).json, [], 'no room was created');
    expectLimited(await alice.post('/api/contacts', { nick: bob.nick }), 60);
    assert.deepEqual((await alice.get('/api/contacts')).json, []);
    expectLimited(await alice.post('/api/devices', { id: 'dev-limit-aaaa2' }), 60);
    expectLimited(await alice.post('/api/logout'), 60);
    expectLimited(await alice.post('/api/password', {}), 60);
    expectLimited(await alice.del('/api/me', { authKey: alice.authKey }), 60);
    expectLimited(await alice.post(`/api/rooms/${room}/leave`), 60);
    assert.equal((await alice.get('/api/me')).status, 200, 'the account and its session are still there');
  });

  test('the write limit counts per nick: another session of the same account shares it, another account does not', async () => {
    const alice = await signup(server);
    const bob = await signup(server);
    const alice2 = new Client(server);
    assert.equal((await alice2.post('/api/login', { nick: alice.nick, authKey: alice.authKey })).status, 200);
    assert.equal((await alice.post('/api/contacts', { nick: bob.nick })).status, 201);
    assert.equal((await alice2.post('/api/contacts', { nick: bob.nick })).status, 200);
    assert.equal((await alice.del(`/api/contacts/${bob.nick}`)).status, 204);
    expectLimited(await alice2.post('/api/contacts', { nick: bob.nick }), 60);
    expectLimited(await alice.post('/api/contacts', { nick: bob.nick }), 60);
    assert.equal((await bob.post('/api/contacts', { nick: alice.nick })).status, 201, 'bob has his own budget');
  });

  test('GET routes and POST /api/messages are outside the write limit', async () => {
    const alice = await signup(server);
    const bob = await signup(server);
    const dev = await addDevice(alice);
    for (let i = 0; i < 5; i++) {
      for (const p of ['/api/me', '/api/devices', '/api/contacts', '/api/rooms', `/api/users/${bob.nick}`, '/api/config']) {
        assert.equal((await alice.get(p)).status, 200, p);
      }
    }
    assert.equal((await alice.post('/api/contacts', { nick: bob.nick })).status, 201, 'GETs did not use the budget');
    assert.equal((await alice.del(`/api/contacts/${bob.nick}`)).status, 204);
    expectLimited(await alice.post('/api/contacts', { nick: bob.nick }), 60);
    for (let i = 0; i < 5; i++) {
      const r = await alice.post('/api/messages', dmBody(bob.nick), { device: dev });
      assert.equal(r.status, 202, r.text);
    }
    for (const p of ['/api/me', '/api/devices', '/api/contacts', '/api/rooms']) assert.equal((await alice.get(p)).status, 200, p);
    const s = await Stream.open(alice, dev);
    assert.equal(s.status, 200, 'the event stream is a GET');
    s.close();
  });

  test('the session check (401) comes before the write limit (429)', async () => {
    const alice = await signup(server);
    const bob = await signup(server);
    const old = new Client(server);
    assert.equal((await old.post('/api/login', { nick: alice.nick, authKey: alice.authKey })).status, 200);
    const oldCookie = old.cookie;
    assert.equal((await old.post('/api/logout')).status, 204);
    assert.equal((await alice.post('/api/contacts', { nick: bob.nick })).status, 201);
    assert.equal((await alice.del(`/api/contacts/${bob.nick}`)).status, 204);
    expectLimited(await alice.post('/api/contacts', { nick: bob.nick }), 60);
    old.cookie = oldCookie;
    assertError(await old.post('/api/contacts', { nick: bob.nick }), 401, 'unauthenticated');
    assertError(await old.post('/api/logout'), 401, 'unauthenticated');
    assertError(await new Client(server).post('/api/contacts', { nick: bob.nick }), 401, 'unauthenticated');
  });
});

describe('limits: message limit per nick', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ LIMIT_MESSAGES_PER_MIN: '3', LIMIT_WRITES_PER_MIN: '4' });
  });
  after(async () => {
    await server.close();
  });

  test('message sending has its own limit per nick: 429 rate_limited with Retry-After, the refused message is not queued', async () => {
    const alice = await signup(server);
    const bob = await signup(server);
    const aDev = await addDevice(alice); // write 1
    const bDev = await addDevice(bob);
    for (let i = 0; i < 3; i++) assert.equal((await alice.post('/api/messages', dmBody(bob.nick), { device: aDev })).status, 202);
    const refused = dmBody(bob.nick);
    expectLimited(await alice.post('/api/messages', refused, { device: aDev }), 60);
    const s = await Stream.open(bob, bDev);
    assert.ok(await s.ready());
    assert.equal(s.named('msg').length, 3);
    assert.ok(!s.named('msg').some((e) => e.json.id === refused.id));
    s.close();
    // bob's budget is his own
    assert.equal((await bob.post('/api/messages', dmBody(alice.nick), { device: bDev })).status, 202);
    // the write budget was not used by messages: three more W requests pass, the next is limited
    assert.equal((await alice.post('/api/contacts', { nick: bob.nick })).status, 200);
    assert.equal((await alice.del(`/api/contacts/${bob.nick}`)).status, 204);
    assert.equal((await alice.post('/api/contacts', { nick: bob.nick })).status, 201);
    expectLimited(await alice.post('/api/contacts', { nick: bob.nick }), 60);
    expectLimited(await alice.post('/api/messages', dmBody(bob.nick), { device: aDev }), 60);
  });

  test('an exhausted write budget does not stop message sending', async () => {
    const alice = await signup(server);
    const bob = await signup(server);
    const aDev = await addDevice(alice);
    for (let i = 0; i < 3; i++) assert.equal((await alice.post('/api/contacts', { nick: bob.nick })).status, i === 0 ? 201 : 200);
    expectLimited(await alice.post('/api/contacts', { nick: bob.nick }), 60);
    assert.equal((await alice.post('/api/messages', dmBody(bob.nick), { device: aDev })).status, 202);
  });

  test('the message limit comes after the shape, device and target checks', async () => {
    const alice = await signup(server);
    const bob = await signup(server);
    const aDev = await addDevice(alice);
    for (let i = 0; i < 3; i++) assert.equal((await alice.post('/api/messages', dmBody(bob.nick), { device: aDev })).status, 202);
    expectLimited(await alice.post('/api/messages', dmBody(bob.nick), { device: aDev }), 60);
    assertError(await alice.post('/api/messages', 'x', { device: aDev }), 400, 'bad_json');
    assertError(await alice.post('/api/messages', { ...dmBody(bob.nick), iv: 'x' }, { device: aDev }), 400, 'invalid', 'iv');
    assertError(await alice.post('/api/messages', dmBody(bob.nick), { device: 'not-my-device-1' }), 403, 'unknown_device');
    assertError(await alice.post('/api/messages', dmBody(nick('ghost')), { device: aDev }), 404, 'unknown_user');
    assertError(await alice.post('/api/messages', dmBody(alice.nick), { device: aDev }), 400, 'self');
    assertError(
      await alice.post('/api/messages', { id: dmBody(bob.nick).id, to: { room: id16() }, keyId: id16(), iv: iv(), ct: ct() }, { device: aDev }),
      403,
      'not_member',
    );
  });

  test('the session check (401) comes before the message limit', async () => {
    const alice = await signup(server);
    const bob = await signup(server);
    const aDev = await addDevice(alice);
    const cookie = alice.cookie;
    for (let i = 0; i < 3; i++) assert.equal((await alice.post('/api/messages', dmBody(bob.nick), { device: aDev })).status, 202);
    expectLimited(await alice.post('/api/messages', dmBody(bob.nick), { device: aDev }), 60);
    assertError(await new Client(server).post('/api/messages', dmBody(bob.nick), { device: aDev }), 401, 'unauthenticated');
    assert.equal((await alice.post('/api/logout')).status, 204);
    const stale = new Client(server);
    stale.cookie = cookie;
    assertError(await stale.post('/api/messages', dmBody(bob.nick), { device: aDev }), 401, 'unauthenticated');
  });
});
