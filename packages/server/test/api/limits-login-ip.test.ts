/**
 * The per-IP login bucket (docs/API.md, LIMIT_LOGIN_PER_IP_PER_10MIN, default 100) beside
 * the per (IP, nick) limit: trying many accounts from one address is limited too. Run on every
 * store: with Redis the buckets are shared by the instances.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { assertError, b64, Client, nick, signup, startServer, type Res, type TestServer } from '@svc/testkit/harness';

let server: TestServer;
before(async () => {
  // The empty value selects the default (the harness raises every limit otherwise).
  server = await startServer({ LIMIT_LOGIN_PER_IP_PER_10MIN: '', LIMIT_LOGIN_PER_10MIN: '10' });
});
after(async () => {
  await server.close();
});

const from = (addr: string) => ({ headers: { 'x-real-ip': addr } });

function expectLimited(r: Res): void {
  assertError(r, 429, 'rate_limited');
  const ra = r.headers.get('retry-after') ?? '';
  assert.match(ra, /^[1-9][0-9]*$/, `Retry-After "${ra}"`);
  assert.ok(Number(ra) <= 600, `Retry-After ${ra} within the 10-minute window`);
}

/** `n` login attempts from `addr`, each with a nick never tried before, ten at a time. */
async function attempts(addr: string, n: number, body: () => unknown = () => ({ nick: nick('guess'), authKey: b64(32) })): Promise<Res[]> {
  const out: Res[] = [];
  for (let i = 0; i < n; i += 10) {
    const batch = Array.from({ length: Math.min(10, n - i) }, () => new Client(server).post('/api/login', body(), from(addr)));
    out.push(...(await Promise.all(batch)));
  }
  return out;
}

test('login: after 100 attempts across different nicks from one IP, the next answers 429 rate_limited with Retry-After', async () => {
  const alice = await signup(server);
  for (const r of await attempts('203.0.113.40', 100)) assertError(r, 401, 'invalid_credentials');
  expectLimited(await new Client(server).post('/api/login', { nick: nick('guess'), authKey: b64(32) }, from('203.0.113.40')));
  const c = new Client(server);
  expectLimited(await c.post('/api/login', { nick: alice.nick, authKey: alice.authKey }, from('203.0.113.40')));
  assert.equal(c.cookie, null, 'even the right key gets no session from that address');
  assert.equal(
    (await new Client(server).post('/api/login', { nick: alice.nick, authKey: alice.authKey }, from('203.0.113.41'))).status,
    200,
    'another address has its own bucket',
  );
});

test('login: attempts refused for their body count in the per-IP bucket too', async () => {
  const rs = await attempts('203.0.113.42', 100, () => ({ nick: nick('guess'), authKey: 'not-a-key' }));
  for (const r of rs) assertError(r, 400, 'invalid', 'authKey');
  expectLimited(await new Client(server).post('/api/login', 'not json', from('203.0.113.42')));
  expectLimited(await new Client(server).post('/api/login', { nick: nick('guess'), authKey: b64(32) }, from('203.0.113.42')));
});

test('login: the per (IP, nick) limit still holds below the per-IP bucket', async () => {
  const alice = await signup(server);
  for (let i = 0; i < 10; i++)
    assertError(
      await new Client(server).post('/api/login', { nick: alice.nick, authKey: b64(32) }, from('203.0.113.43')),
      401,
      'invalid_credentials',
    );
  expectLimited(await new Client(server).post('/api/login', { nick: alice.nick, authKey: alice.authKey }, from('203.0.113.43')));
  assert.equal(
    (await new Client(server).post('/api/login', { nick: (await signup(server)).nick, authKey: b64(32) }, from('203.0.113.43'))).status,
    401,
    'other nicks from the address still have room',
  );
});
