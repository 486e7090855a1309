/**
 * Rules that hold for every route of a kind (docs/API.md), checked route by route
 * from the interface's own tables, written out here rather than read from the protocol's route
 * table, so that a route the table marks wrongly fails: every route but the public ones answers
 * 401 without a session, and every route marked W counts against, and is held by, the one write
 * budget per nick.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { assertError, Client, id16, signup, startServer, type Client as C, type Res, type TestServer } from '@svc/testkit/harness';

type Call = [method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string];

/**
 * Every route that needs a session, as the interface lists them (its tables and its rules of
 * authentication), and whether it is marked W there (`POST /api/ack` is W in its text).
 */
const SESSION_ROUTES: [...Call, write: boolean][] = [
  ['GET', '/api/me', false],
  ['DELETE', '/api/me', true],
  ['POST', '/api/logout', true],
  ['POST', '/api/password', true],
  ['GET', '/api/users/somebody', false],
  ['POST', '/api/devices', true],
  ['GET', '/api/devices', false],
  ['DELETE', '/api/devices/dev-every-0001', true],
  ['PUT', '/api/devices/dev-every-0001/push', true],
  ['DELETE', '/api/devices/dev-every-0001/push', true],
  ['GET', '/api/contacts', false],
  ['POST', '/api/contacts', true],
  ['DELETE', '/api/contacts/somebody', true],
  ['GET', '/api/rooms', false],
  ['POST', '/api/rooms', true],
  ['POST', `/api/rooms/${id16()}/members`, true],
  ['POST', `/api/rooms/${id16()}/leave`, true],
  ['DELETE', `/api/rooms/${id16()}`, true],
  ['POST', '/api/messages', false],
  ['POST', '/api/ack', true],
  ['GET', '/api/events?device=dev-every-0001', false],
  // The attachment store (the one addition to the interface): parts have a limit of their own.
  ['PUT', `/api/attachments/${id16()}/parts/0`, false],
  ['POST', `/api/attachments/${id16()}/finish`, true],
  ['GET', `/api/attachments/${id16()}`, false],
  ['DELETE', `/api/attachments/${id16()}`, true],
];

const WRITE_ROUTES: Call[] = SESSION_ROUTES.filter(([, , write]) => write).map(([method, path]) => [method, path]);

/** A request with an empty JSON object as its body where the method takes one (its shape does not matter here). */
function call(c: C, [method, path]: Call): Promise<Res> {
  return c.req(method, path, method === 'GET' ? {} : { body: {} });
}

describe('every route that needs a session', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(async () => {
    await server.close();
  });

  test('answers 401 unauthenticated without a session cookie, and with a cookie of no session', async () => {
    const none = new Client(server);
    const unknown = new Client(server);
    unknown.cookie = `svc_session=${'A'.repeat(43)}`;
    for (const [method, path] of SESSION_ROUTES) {
      const route: Call = [method, path];
      for (const c of [none, unknown]) {
        const r = await call(c, route);
        assert.equal(r.status, 401, `${route.join(' ')}: ${r.status} ${r.text}`);
        assertError(r, 401, 'unauthenticated');
      }
    }
  });
});

describe('every route marked W', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ LIMIT_WRITES_PER_MIN: '1' });
  });
  after(async () => {
    await server.close();
  });

  test('counts against the write budget of its nick, whatever the handler then answers', async () => {
    for (const route of WRITE_ROUTES) {
      const alice = await signup(server);
      // A second session of the same nick shares the budget, and outlives a logout or a failed deletion of the first.
      const again = new Client(server);
      assert.equal((await again.post('/api/login', { nick: alice.nick, authKey: alice.authKey })).status, 200);
      const first = await call(alice, route);
      assert.notEqual(first.status, 429, `${route.join(' ')} is answered while the budget lasts`);
      const next = await again.post('/api/contacts', { nick: alice.nick });
      assertError(next, 429, 'rate_limited');
      assert.match(next.headers.get('retry-after') ?? '', /^[1-9][0-9]*$/);
    }
  });

  test('answers 429 rate_limited with Retry-After once the budget is spent, before its handler looks at the request', async () => {
    for (const route of WRITE_ROUTES) {
      const alice = await signup(server);
      assert.equal((await alice.post('/api/contacts', { nick: alice.nick })).status, 400, 'self: refused, and counted');
      const r = await call(alice, route);
      assertError(r, 429, 'rate_limited');
      assert.match(r.headers.get('retry-after') ?? '', /^[1-9][0-9]*$/, route.join(' '));
    }
    const bob = await signup(server);
    assert.equal((await bob.get('/api/me')).status, 200, 'reads are outside the write budget');
    assert.equal((await bob.get('/api/me')).status, 200);
  });
});
