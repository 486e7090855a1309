/**
 * The per-nick login budget (LIMIT_LOGIN_PER_NICK_PER_10MIN, default 50): guesses at one nick
 * from many addresses are slowed to the budget, while the addresses the nick signed in from (or
 * registered from) in the last 30 days are not held by it, so a stranger who spends it does not
 * lock the owner out there. Run on every store: with Redis the budget and the known addresses are
 * shared by the instances. The client address comes from X-Real-IP (the tests reach the service
 * from loopback).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { assertError, b64, Client, nick, registerBody, startServer, type Res, type TestServer } from '@svc/testkit/harness';

const BUDGET = 50;
const clock = { now: Date.now() };
let server: TestServer;
before(async () => {
  // The empty value selects the default (the harness raises every limit otherwise).
  server = await startServer({ LIMIT_LOGIN_PER_NICK_PER_10MIN: '' }, { now: () => clock.now });
});
after(async () => {
  await server.close();
});

const from = (addr: string) => ({ headers: { 'x-real-ip': addr } });
const login = (addr: string, body: unknown) => new Client(server).post('/api/login', body, from(addr));

let addrSeq = 0;
/** An address no earlier attempt of this file came from: a /64 of its own. */
const fresh = () => `2001:db8:${(++addrSeq).toString(16)}:7::1`;

function expectLimited(r: Res): void {
  assertError(r, 429, 'rate_limited');
  const ra = r.headers.get('retry-after') ?? '';
  assert.match(ra, /^[1-9][0-9]*$/, `Retry-After "${ra}"`);
  assert.ok(Number(ra) <= 600, `Retry-After ${ra} within the 10-minute window`);
}

/** Registers `n` from `addr`; returns its authKey. */
async function registerFrom(addr: string, n: string): Promise<string> {
  const body = registerBody(n);
  const r = await new Client(server).post('/api/register', body, from(addr));
  assert.equal(r.status, 201, r.text);
  return body.authKey;
}

/** Wrong keys for `n`, each from a fresh address, until one is refused; returns how many were judged. */
async function spend(n: string): Promise<number> {
  for (let judged = 0; judged <= BUDGET; judged++) {
    const r = await login(fresh(), { nick: n, authKey: b64(32) });
    if (r.status === 429) {
      expectLimited(r);
      return judged;
    }
    assertError(r, 401, 'invalid_credentials');
  }
  assert.fail(`no refusal after ${BUDGET + 1} attempts`);
}

test('login per nick: the 51st failed attempt from distinct addresses answers 429 rate_limited with Retry-After, even with the right key', async () => {
  const n = nick('pn');
  const key = await registerFrom('203.0.113.80', n);
  assert.equal(await spend(n), BUDGET, 'fifty guesses were judged, the fifty-first refused');
  const c = new Client(server);
  expectLimited(await c.post('/api/login', { nick: n, authKey: key }, from(fresh())));
  assert.equal(c.cookie, null, 'the right key gets no session from a new address');
});

test('login per nick: an unknown nick has the same budget, so the refusal tells nothing about which nicks exist', async () => {
  const ghost = nick('ghost');
  assert.equal(await spend(ghost), BUDGET);
  expectLimited(await login(fresh(), { nick: ghost, authKey: b64(32) }));
});

test('login per nick: the owner still signs in from an address that signed in to the nick in the last 30 days while the budget is spent', async () => {
  const n = nick('own');
  const home = '203.0.113.81';
  const phone = '2001:db8:ffff:1::10';
  const key = await registerFrom(home, n);
  assert.equal((await login(phone, { nick: n, authKey: key })).status, 200, 'the owner signs in from a second place');
  assert.ok((await spend(n)) >= BUDGET - 1);
  const c = new Client(server);
  assert.equal((await c.post('/api/login', { nick: n, authKey: key }, from(home))).status, 200, 'from the address it registered from');
  assert.ok(c.cookie, 'with a session');
  assert.equal((await login(phone, { nick: n, authKey: key })).status, 200, 'from the address it signed in from');
  assert.equal((await login('2001:db8:ffff:1:abcd::77', { nick: n, authKey: key })).status, 200, 'from another address of that /64');
  assertError(await login(home, { nick: n, authKey: b64(32) }), 401, 'invalid_credentials');
  expectLimited(await login(fresh(), { nick: n, authKey: key }));
  expectLimited(await login('::ffff:203.0.113.82', { nick: n, authKey: key }));
  // Another nick's sign-in from a new address does not let that address past this nick's budget.
  const other = nick('oth');
  const otherKey = await registerFrom('203.0.113.83', other);
  assert.equal((await login('203.0.113.84', { nick: other, authKey: otherKey })).status, 200);
  expectLimited(await login('203.0.113.84', { nick: n, authKey: key }));
});

test('login per nick: a sign-in 30 days ago no longer lets its address past the budget', async () => {
  const n = nick('old');
  const home = '203.0.113.85';
  const key = await registerFrom(home, n);
  clock.now += 30 * 24 * 3600 * 1000 + 1;
  await spend(n);
  expectLimited(await login(home, { nick: n, authKey: key }));
});

test('login per nick: bad input answers its own error whether or not the budget is spent, and counts nothing', async () => {
  const spent = nick('bad');
  await registerFrom('203.0.113.86', spent);
  await spend(spent);
  assertError(await login(fresh(), 'not json'), 400, 'bad_json');
  assertError(await login(fresh(), { nick: spent, authKey: 'not-a-key' }), 400, 'invalid', 'authKey');
  assertError(await login(fresh(), { nick: 'Not A Nick', authKey: b64(32) }), 400, 'invalid', 'nick');
  assertError(await login(fresh(), { nick: spent }), 400, 'invalid', 'authKey');

  const untouched = nick('bad');
  for (let i = 0; i < BUDGET + 10; i++) assertError(await login(fresh(), { nick: untouched, authKey: 'x' }), 400, 'invalid', 'authKey');
  assertError(await login(fresh(), { nick: untouched, authKey: b64(32) }), 401, 'invalid_credentials');
});
