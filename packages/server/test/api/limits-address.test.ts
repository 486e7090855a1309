/**
 * Every per-address limit counts an IPv6 client by its /64 and an IPv4-mapped address as its IPv4
 * address: one subscriber gets a whole /64, and must not get a fresh budget from every address
 * in it. The client address comes from X-Real-IP, as the tests reach the service from loopback.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { assertError, b64, Client, nick, registerBody, signup, startServer, type Res, type TestServer } from '@svc/testkit/harness';

let server: TestServer;
before(async () => {
  server = await startServer({ LIMIT_REGISTER_PER_HOUR: '2', LIMIT_LOGIN_PER_10MIN: '3', LIMIT_LOGIN_PER_IP_PER_10MIN: '5' });
});
after(async () => {
  await server.close();
});

const from = (addr: string) => ({ headers: { 'x-real-ip': addr } });

function expectLimited(r: Res, what: string): void {
  assertError(r, 429, 'rate_limited');
  assert.match(r.headers.get('retry-after') ?? '', /^[1-9][0-9]*$/, what);
}

const register = (addr: string) => new Client(server).post('/api/register', registerBody(nick('a64')), from(addr));
const login = (addr: string, body: unknown) => new Client(server).post('/api/login', body, from(addr));

test('registration: two addresses of one IPv6 /64 share one budget, and another /64 has its own', async () => {
  assert.equal((await register('2001:db8:10:1::1')).status, 201);
  assert.equal((await register('2001:db8:10:1:ffff:ffff:ffff:fffe')).status, 201);
  expectLimited(await register('2001:db8:10:1:1234::9'), 'a third address of the /64');
  assert.equal((await register('2001:db8:10:2::1')).status, 201, 'the neighbouring /64');
});

test('login per (address, nick): two addresses of one IPv6 /64 share one budget', async () => {
  const alice = await signup(server);
  for (const addr of ['2001:db8:11:1::1', '2001:db8:11:1::2', '2001:db8:11:1:aaaa::3'])
    assertError(await login(addr, { nick: alice.nick, authKey: b64(32) }), 401, 'invalid_credentials');
  expectLimited(await login('2001:db8:11:1:bbbb::4', { nick: alice.nick, authKey: alice.authKey }), 'a fourth address of the /64');
  assert.equal((await login('2001:db8:11:2::1', { nick: alice.nick, authKey: alice.authKey })).status, 200, 'the neighbouring /64');
});

test('login per address: two addresses of one IPv6 /64 share one budget across nicks', async () => {
  for (let i = 1; i <= 5; i++) assertError(await login(`2001:db8:12:1::${i}`, { nick: nick('g'), authKey: b64(32) }), 401, 'invalid_credentials');
  expectLimited(await login('2001:db8:12:1:ffff::6', { nick: nick('g'), authKey: b64(32) }), 'a sixth address of the /64');
  assertError(await login('2001:db8:12:2::6', { nick: nick('g'), authKey: b64(32) }), 401, 'invalid_credentials');
});

test('compressed and expanded spellings of one /64 count as one key', async () => {
  assert.equal((await register('2001:db8:13:1::7')).status, 201);
  assert.equal((await register('2001:0DB8:0013:0001:0000:0000:0000:0008')).status, 201);
  expectLimited(await register('2001:db8:13:1:0:0:0:9'), 'the /64 written out in full');
});

test('an IPv4-mapped IPv6 address counts as the IPv4 address it carries', async () => {
  assert.equal((await register('198.51.100.60')).status, 201);
  assert.equal((await register('::ffff:198.51.100.60')).status, 201);
  expectLimited(await register('::ffff:c633:643c'), 'the mapped address in hex');
  expectLimited(await register('198.51.100.60'), 'the IPv4 address itself');
  assert.equal((await register('198.51.100.61')).status, 201, 'the next IPv4 address is another client');
});
