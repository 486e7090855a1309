/**
 * General rules and the request pipeline (docs/API.md; the origin check, static
 * files): origin → body size → routing →
 * session → handler, and the headers every response carries.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  assertError,
  Client,
  ORIGIN,
  id16,
  wk,
  Stream,
  addDevice,
  nick,
  registerBody,
  signup,
  startServer,
  type Res,
  type TestServer,
} from '@svc/testkit/harness';
import { defaultWebRoot } from '../../src/paths.js';

const CSP = "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";
const JSON_TYPE = 'application/json; charset=utf-8';
const LIMIT = 32768;

function expectSecurityHeaders(h: Headers, what: string): void {
  assert.equal(h.get('content-security-policy'), CSP, `CSP on ${what}`);
  assert.equal(h.get('referrer-policy'), 'no-referrer', `Referrer-Policy on ${what}`);
  assert.equal(h.get('x-content-type-options'), 'nosniff', `X-Content-Type-Options on ${what}`);
}

function expectJsonHeaders(h: Headers, what: string): void {
  assert.equal(h.get('content-type'), JSON_TYPE, `Content-Type on ${what}`);
  assert.equal(h.get('cache-control'), 'no-store', `Cache-Control on ${what}`);
}

interface RawRes {
  status: number;
  headers: Headers;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
}

/**
 * A request over node:http, for what fetch cannot send: a chosen Content-Length, a chunked body,
 * no Content-Type. `chunks` are written one by one (chunked unless content-length is given).
 */
function raw(server: TestServer, method: string, path: string, headers: Record<string, string>, chunks: Buffer[] = []): Promise<RawRes> {
  const url = new URL(server.url);
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = request({ host: url.hostname, port: url.port, method, path, headers }, (res) => {
      answered = true;
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let json: unknown;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = undefined;
        }
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(', ') : v);
        resolve({ status: res.statusCode ?? 0, headers: h, text, json });
      });
      res.on('error', (e) => (answered ? undefined : reject(e)));
    });
    req.on('error', (e) => {
      if (!answered) reject(e);
    });
    (async () => {
      for (const c of chunks) {
        if (req.destroyed || answered) break;
        req.write(c);
        await new Promise((r) => setImmediate(r));
      }
      if (!req.destroyed) req.end();
    })().catch(() => undefined);
  });
}

/** A JSON text of exactly `n` bytes: {"nick":"A","pad":"xxx…"} (nick invalid, so nothing is created). */
function paddedJson(n: number): string {
  const head = '{"nick":"A","pad":"';
  const tail = '"}';
  return head + 'x'.repeat(n - head.length - tail.length) + tail;
}

describe('pipeline', () => {
  let server: TestServer;
  let anon: Client;

  before(async () => {
    server = await startServer();
    anon = new Client(server);
  });
  after(async () => {
    await server.close();
  });

  async function nickIsFree(n: string): Promise<boolean> {
    const c = new Client(server);
    const r = await c.post('/api/register', registerBody(n));
    return r.status === 201;
  }

  describe('origin check (docs/API.md)', () => {
    test('an Origin header that differs from ORIGIN is refused with 403 bad_origin on every kind of route', async () => {
      const alice = await signup(server);
      const foreign = ['http://evil.example', 'https://svc.test', 'http://svc.test:8080', 'http://sub.svc.test', 'null'];
      for (const origin of foreign) {
        const h = { headers: { origin } };
        assertError(await anon.get('/api/config', h), 403, 'bad_origin');
        assertError(await anon.get('/api/kdf?nick=abc', h), 403, 'bad_origin');
        assertError(await alice.get('/api/me', h), 403, 'bad_origin');
        assertError(await anon.get('/healthz', h), 403, 'bad_origin');
        assertError(await anon.get('/', h), 403, 'bad_origin');
        assertError(await anon.get('/some/client/route', h), 403, 'bad_origin');
        assertError(await anon.post('/api/login', { nick: alice.nick, authKey: alice.authKey }, h), 403, 'bad_origin');
      }
    });

    test('a request refused for a foreign Origin changes nothing', async () => {
      const n = nick();
      const refused = await new Client(server).post('/api/register', registerBody(n), { headers: { origin: 'http://evil.example' } });
      assertError(refused, 403, 'bad_origin');
      assert.equal(refused.headers.get('set-cookie'), null);
      const alice = await signup(server);
      assertError(await alice.post('/api/logout', undefined, { headers: { origin: 'http://evil.example' } }), 403, 'bad_origin');
      assert.equal((await alice.get('/api/me')).status, 200, 'session still valid');
      assert.ok(await nickIsFree(n), 'no account was created');
    });

    test('Sec-Fetch-Site cross-site is refused with 403 bad_origin even with the right Origin', async () => {
      const alice = await signup(server);
      const h = { headers: { 'sec-fetch-site': 'cross-site' } };
      assertError(await anon.get('/api/config', h), 403, 'bad_origin');
      assertError(await alice.get('/api/me', h), 403, 'bad_origin');
      assertError(await anon.get('/healthz', h), 403, 'bad_origin');
      assertError(await anon.get('/', h), 403, 'bad_origin');
      assertError(await anon.get('/api/config', { noOrigin: true, ...h }), 403, 'bad_origin');
      const n = nick();
      assertError(await new Client(server).post('/api/register', registerBody(n), h), 403, 'bad_origin');
      assert.ok(await nickIsFree(n), 'no account was created');
    });

    test('Sec-Fetch-Site same-site is refused with 403 bad_origin even with the right Origin', async () => {
      const alice = await signup(server);
      const h = { headers: { 'sec-fetch-site': 'same-site' } };
      assertError(await anon.get('/api/config', h), 403, 'bad_origin');
      assertError(await alice.get('/api/me', h), 403, 'bad_origin');
      assertError(await anon.get('/', h), 403, 'bad_origin');
      assertError(await anon.get('/api/config', { noOrigin: true, ...h }), 403, 'bad_origin');
      assertError(await alice.post('/api/logout', undefined, h), 403, 'bad_origin');
      assert.equal((await alice.get('/api/me')).status, 200, 'session still valid');
    });

    test('Sec-Fetch-Site same-origin and none pass the origin check', async () => {
      const alice = await signup(server);
      assert.equal((await anon.get('/api/config', { headers: { 'sec-fetch-site': 'same-origin' } })).status, 200);
      assert.equal((await alice.get('/api/me', { headers: { 'sec-fetch-site': 'same-origin' } })).status, 200);
      assert.equal((await anon.get('/', { noOrigin: true, headers: { 'sec-fetch-site': 'none' } })).status, 200);
      const r = await new Client(server).post('/api/register', registerBody(nick()), { headers: { 'sec-fetch-site': 'same-origin' } });
      assert.equal(r.status, 201, r.text);
    });

    test('a request with a method other than GET and HEAD and no Origin is refused with 403 bad_origin', async () => {
      const alice = await signup(server);
      const n = nick();
      assertError(await new Client(server).post('/api/register', registerBody(n), { noOrigin: true }), 403, 'bad_origin');
      assertError(await anon.post('/api/login', { nick: alice.nick, authKey: alice.authKey }, { noOrigin: true }), 403, 'bad_origin');
      assertError(await alice.post('/api/logout', undefined, { noOrigin: true }), 403, 'bad_origin');
      assertError(await alice.del('/api/me', { authKey: alice.authKey }, { noOrigin: true }), 403, 'bad_origin');
      assertError(await alice.post('/api/devices', { id: 'device-no-origin' }, { noOrigin: true }), 403, 'bad_origin');
      assertError(await alice.put('/api/devices/device-no-origin/push', {}, { noOrigin: true }), 403, 'bad_origin');
      assertError(await anon.post('/api/nope', {}, { noOrigin: true }), 403, 'bad_origin');
      // nothing changed
      assert.equal((await alice.get('/api/me')).status, 200, 'session and account still there');
      assert.deepEqual((await alice.get('/api/devices')).json, []);
      assert.ok(await nickIsFree(n), 'no account was created');
    });

    test('GET and HEAD without Origin pass the origin check', async () => {
      const alice = await signup(server);
      assert.equal((await anon.get('/api/config', { noOrigin: true })).status, 200);
      assert.equal((await anon.req('HEAD', '/api/config', { noOrigin: true })).status, 200);
      assert.equal((await alice.get('/api/me', { noOrigin: true })).status, 200);
      assert.equal((await anon.get('/healthz', { noOrigin: true })).status, 200);
      assert.equal((await anon.req('HEAD', '/healthz', { noOrigin: true })).status, 200);
      assert.equal((await anon.get('/', { noOrigin: true })).status, 200);
      assert.equal((await anon.get('/a/client/route', { noOrigin: true })).status, 200);
      assertError(await anon.get('/api/me', { noOrigin: true }), 401, 'unauthenticated');
    });

    test('the origin check comes before the body-size check, routing and the session check', async () => {
      const big = Buffer.alloc(LIMIT + 1, 0x20);
      const foreign = { origin: 'http://evil.example', 'content-type': 'application/json', 'content-length': String(big.length) };
      assertError(await raw(server, 'POST', '/api/register', foreign, [big]), 403, 'bad_origin');
      assertError(
        await raw(server, 'POST', '/api/register', { 'content-type': 'application/json', 'content-length': String(big.length) }, [big]),
        403,
        'bad_origin',
      );
      assertError(await anon.get('/api/nope', { headers: { origin: 'http://evil.example' } }), 403, 'bad_origin');
      assertError(await anon.req('PATCH', '/api/me', { headers: { origin: 'http://evil.example' } }), 403, 'bad_origin');
      assertError(await anon.post('/api/nope', {}, { noOrigin: true }), 403, 'bad_origin');
      assertError(await anon.get('/api/me', { headers: { origin: 'http://evil.example' } }), 403, 'bad_origin');
      assertError(await anon.post('/api/contacts', { nick: 'abc' }, { noOrigin: true }), 403, 'bad_origin');
    });
  });

  describe('body size', () => {
    test('a declared Content-Length over 32768 bytes answers 413 too_large and creates nothing', async () => {
      const n = nick();
      const body = JSON.stringify(registerBody(n));
      const padded = Buffer.from(body + ' '.repeat(LIMIT + 1 - Buffer.byteLength(body)));
      assert.equal(padded.length, LIMIT + 1);
      const r = await raw(
        server,
        'POST',
        '/api/register',
        { origin: ORIGIN, 'content-type': 'application/json', 'content-length': String(padded.length) },
        [padded],
      );
      assertError(r, 413, 'too_large');
      assert.ok(await nickIsFree(n), 'no account was created');
    });

    test('a body of exactly 32768 bytes is not too large', async () => {
      const body = paddedJson(LIMIT);
      assert.equal(Buffer.byteLength(body), LIMIT);
      assertError(await new Client(server).post('/api/register', body), 400, 'invalid_nick');
    });

    test('a chunked body that grows over 32768 bytes answers 413 too_large while reading', async () => {
      const n = nick();
      const body = JSON.stringify(registerBody(n));
      const whole = Buffer.from(body + ' '.repeat(40000 - body.length));
      const chunks = [whole.subarray(0, 10000), whole.subarray(10000, 20000), whole.subarray(20000, 30000), whole.subarray(30000)];
      const r = await raw(server, 'POST', '/api/register', { origin: ORIGIN, 'content-type': 'application/json' }, chunks);
      assertError(r, 413, 'too_large');
      assert.ok(await nickIsFree(n), 'no account was created');

      const alice = await signup(server);
      const c2 = Buffer.from(JSON.stringify({ nick: 'abc', pad: 'x'.repeat(40000) }));
      const r2 = await raw(server, 'POST', '/api/contacts', { origin: ORIGIN, 'content-type': 'application/json', cookie: alice.cookie! }, [
        c2.subarray(0, 20000),
        c2.subarray(20000),
      ]);
      assertError(r2, 413, 'too_large');
    });

    test('a chunked body within 32768 bytes is read as usual', async () => {
      const n = nick();
      const body = Buffer.from(JSON.stringify(registerBody(n)));
      const r = await raw(server, 'POST', '/api/register', { origin: ORIGIN, 'content-type': 'application/json' }, [
        body.subarray(0, 50),
        body.subarray(50),
      ]);
      assert.equal(r.status, 201, r.text);
    });

    test('the body-size check comes before routing and the session check', async () => {
      const big = Buffer.alloc(LIMIT + 1, 0x20);
      const h = { origin: ORIGIN, 'content-type': 'application/json', 'content-length': String(big.length) };
      assertError(await raw(server, 'POST', '/api/nope', h, [big]), 413, 'too_large');
      assertError(await raw(server, 'PATCH', '/api/me', h, [big]), 413, 'too_large');
      assertError(await raw(server, 'POST', '/api/contacts', h, [big]), 413, 'too_large');
      assertError(await raw(server, 'POST', '/api/logout', h, [big]), 413, 'too_large');
    });
  });

  describe('routing', () => {
    test('an unknown path under /api/ answers 404 not_found', async () => {
      const alice = await signup(server);
      const paths: [string, string][] = [
        ['GET', '/api/nope'],
        ['POST', '/api/nope'],
        ['GET', '/api/'],
        ['GET', '/api/me/'],
        ['GET', '/api/users'],
        ['GET', '/api/users/abc/def'],
        ['POST', '/api/rooms/abc/unknown'],
        ['GET', '/api/v1/config'],
        ['DELETE', '/api/devices/abcdefgh/push/extra'],
      ];
      for (const [m, p] of paths) {
        assertError(await alice.req(m, p), 404, 'not_found');
        assertError(await anon.req(m, p), 404, 'not_found');
      }
    });

    test('an unsupported method on a known path answers 404 not_found, never 405', async () => {
      const alice = await signup(server);
      const cases: [string, string][] = [
        ['PATCH', '/api/me'],
        ['PUT', '/api/me'],
        ['PUT', '/api/config'],
        ['POST', '/api/config'],
        ['DELETE', '/api/register'],
        ['GET', '/api/register'],
        ['GET', '/api/login'],
        ['POST', '/api/kdf'],
        ['GET', '/api/logout'],
        ['PUT', '/api/rooms'],
        ['GET', '/api/messages'],
        ['GET', '/api/ack'],
        ['POST', '/api/users/abc'],
        ['GET', '/api/rooms/abc/leave'],
        ['POST', '/api/events'],
        ['GET', '/api/password'],
      ];
      for (const [m, p] of cases) {
        const r = await alice.req(m, p, m === 'GET' ? {} : { body: {} });
        assert.notEqual(r.status, 405, `${m} ${p}`);
        assertError(r, 404, 'not_found');
      }
    });

    test('routing comes before the session check: unknown routes answer 404 without a session', async () => {
      assertError(await anon.get('/api/nope'), 404, 'not_found');
      assertError(await anon.req('PATCH', '/api/me', { body: {} }), 404, 'not_found');
      assertError(await anon.post('/api/rooms/abc/unknown', {}), 404, 'not_found');
      assertError(await anon.req('PUT', '/api/contacts', { body: {}, headers: { cookie: 'svc_session=garbage' } }), 404, 'not_found');
    });
  });

  describe('session check and body parsing', () => {
    test('a route that needs a session answers 401 unauthenticated before parsing the body', async () => {
      assertError(await anon.post('/api/contacts', 'not json'), 401, 'unauthenticated');
      assertError(await anon.post('/api/contacts', '{"nick":"abc"}', { headers: { 'content-type': 'text/plain' } }), 401, 'unauthenticated');
      assertError(
        await anon.post('/api/contacts', 'not json', { headers: { cookie: 'svc_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' } }),
        401,
        'unauthenticated',
      );
      assertError(await anon.post('/api/password', ''), 401, 'unauthenticated');
      assertError(await anon.get('/api/me'), 401, 'unauthenticated');
      assertError(await anon.get('/api/users/abc'), 401, 'unauthenticated');
    });

    test('a body that is not JSON answers 400 bad_json and changes nothing', async () => {
      const alice = await signup(server);
      const bob = await signup(server);
      for (const body of ['not json', `{"nick":"${bob.nick}"`, "{'nick':'x'}", '{"nick": undefined}']) {
        assertError(await alice.post('/api/contacts', body), 400, 'bad_json');
      }
      assert.deepEqual((await alice.get('/api/contacts')).json, []);
      assertError(await new Client(server).post('/api/register', 'nick=abc&authKey=x'), 400, 'bad_json');
    });

    test('a body whose Content-Type is not application/json answers 400 bad_json; parameters such as charset are allowed', async () => {
      const alice = await signup(server);
      const bob = await signup(server);
      const body = JSON.stringify({ nick: bob.nick });
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/jsonx', 'multipart/form-data; boundary=x']) {
        assertError(await alice.post('/api/contacts', body, { headers: { 'content-type': type } }), 400, 'bad_json');
      }
      const none = await raw(
        server,
        'POST',
        '/api/contacts',
        { origin: ORIGIN, cookie: alice.cookie!, 'content-length': String(Buffer.byteLength(body)) },
        [Buffer.from(body)],
      );
      assertError(none, 400, 'bad_json');
      assert.deepEqual((await alice.get('/api/contacts')).json, [], 'nothing was added');
      // bad_json comes before the nick rule of register
      assertError(
        await new Client(server).post('/api/register', JSON.stringify({ nick: 'A' }), { headers: { 'content-type': 'text/plain' } }),
        400,
        'bad_json',
      );
      const ok = await alice.post('/api/contacts', body, { headers: { 'content-type': 'application/json; charset=utf-8' } });
      assert.equal(ok.status, 201, ok.text);
    });

    test('an empty body where a route expects one answers 400 bad_json', async () => {
      const alice = await signup(server);
      assertError(await alice.post('/api/contacts', ''), 400, 'bad_json');
      assertError(
        await raw(server, 'POST', '/api/contacts', {
          origin: ORIGIN,
          cookie: alice.cookie!,
          'content-type': 'application/json',
          'content-length': '0',
        }),
        400,
        'bad_json',
      );
      assertError(await alice.post('/api/contacts'), 400, 'bad_json');
      assertError(await new Client(server).post('/api/register', ''), 400, 'bad_json');
      assertError(await anon.post('/api/login', ''), 400, 'bad_json');
      assert.deepEqual((await alice.get('/api/contacts')).json, []);
    });

    test('a route that takes no body ignores one', async () => {
      const alice = await signup(server);
      const r = await alice.post('/api/logout', 'this is not json', { headers: { 'content-type': 'text/plain' } });
      assert.equal(r.status, 204, r.text);
      assertError(await alice.get('/api/me'), 401, 'unauthenticated');
    });

    test('a route that takes no body ignores a malformed Content-Type too', async () => {
      const alice = await signup(server);
      const id = id16();
      const room = await alice.post('/api/rooms', { id, name: 'r', keyId: id16(), keys: [wk(alice.nick)] });
      assert.equal(room.status, 201, room.text);
      const r = await alice.req('POST', `/api/rooms/${id}/leave`, { body: '{"not": "read"', headers: { 'content-type': ' ,|9#f' } });
      assert.equal(r.status, 204, r.text);
      assert.deepEqual((await alice.get('/api/rooms')).json, [], 'the caller has left');
    });

    test('an unknown path or method answers 404 not_found whatever its Content-Type', async () => {
      const alice = await signup(server);
      for (const [method, path] of [
        ['PUT', `/api/users/${alice.nick}`],
        ['POST', '/api/nope'],
      ] as const) {
        assertError(await alice.req(method, path, { body: 'x', headers: { 'content-type': ' ,|9#f' } }), 404, 'not_found');
      }
    });
  });

  describe('response headers and bodies', () => {
    test('every response carries the Content-Security-Policy, Referrer-Policy and X-Content-Type-Options headers', async () => {
      const alice = await signup(server);
      const dev = await addDevice(alice);
      const big = Buffer.alloc(LIMIT + 1, 0x20);
      const cases: [string, Res | RawRes][] = [
        ['200 JSON', await anon.get('/api/config')],
        ['201 JSON', await new Client(server).post('/api/register', registerBody(nick()))],
        ['400 invalid', await anon.get('/api/kdf?nick=A')],
        ['400 bad_json', await alice.post('/api/contacts', 'x')],
        ['401', await anon.get('/api/me')],
        ['403 bad_origin', await anon.get('/api/config', { headers: { origin: 'http://evil.example' } })],
        ['404 api', await anon.get('/api/nope')],
        [
          '413',
          await raw(server, 'POST', '/api/register', { origin: ORIGIN, 'content-type': 'application/json', 'content-length': String(big.length) }, [
            big,
          ]),
        ],
        ['static /', await anon.get('/')],
        ['static /index.html', await anon.get('/index.html')],
        ['static fallback', await anon.get('/chat/some/where')],
        ['healthz', await anon.get('/healthz')],
        ['HEAD healthz', await anon.req('HEAD', '/healthz')],
      ];
      for (const [what, r] of cases) expectSecurityHeaders(r.headers, what);

      const s = await Stream.open(alice, dev);
      assert.equal(s.status, 200);
      expectSecurityHeaders(s.headers!, 'event stream');
      assert.equal(s.headers!.get('content-type'), 'text/event-stream; charset=utf-8');
      assert.equal(s.headers!.get('cache-control'), 'no-store');
      s.close();
      const refused = await Stream.open(anon, dev);
      assert.equal(refused.status, 401);
      expectSecurityHeaders(refused.headers!, 'refused event stream');

      const bye = await alice.post('/api/logout');
      assert.equal(bye.status, 204);
      expectSecurityHeaders(bye.headers, '204');
    });

    test('JSON responses have Content-Type application/json; charset=utf-8 and Cache-Control no-store', async () => {
      const alice = await signup(server);
      const big = Buffer.alloc(LIMIT + 1, 0x20);
      const cases: [string, Res | RawRes][] = [
        ['200 config', await anon.get('/api/config')],
        ['200 kdf', await anon.get('/api/kdf?nick=somebody')],
        ['200 me', await alice.get('/api/me')],
        ['201 register', await new Client(server).post('/api/register', registerBody(nick()))],
        ['400 invalid', await anon.get('/api/kdf?nick=A')],
        ['400 bad_json', await alice.post('/api/contacts', 'x')],
        ['401', await anon.get('/api/me')],
        ['403 bad_origin', await anon.post('/api/login', {}, { noOrigin: true })],
        ['404 not_found', await anon.get('/api/nope')],
        ['404 unsupported method', await alice.req('PATCH', '/api/me', { body: {} })],
        [
          '413',
          await raw(server, 'POST', '/api/register', { origin: ORIGIN, 'content-type': 'application/json', 'content-length': String(big.length) }, [
            big,
          ]),
        ],
      ];
      for (const [what, r] of cases) {
        expectJsonHeaders(r.headers, what);
        assert.notEqual(r.json, undefined, `${what} has a JSON body`);
      }
    });

    test('GET /healthz answers 200 text/plain "ok" with Cache-Control no-store', async () => {
      for (const o of [{}, { noOrigin: true }]) {
        const r = await anon.get('/healthz', o);
        assert.equal(r.status, 200);
        assert.equal(r.text, 'ok');
        assert.equal(r.headers.get('content-type'), 'text/plain; charset=utf-8');
        assert.equal(r.headers.get('cache-control'), 'no-store');
      }
    });

    test('any path outside /api/ and /healthz answers the web client index.html with 200 and no-cache', async () => {
      const index = readFileSync(join(defaultWebRoot(), 'index.html'), 'utf8');
      for (const p of ['/', '/index.html', '/login', '/chat/room/abc', '/rooms/x?y=1', '/deep/nested/path/', '/healthz/extra', '/apix']) {
        const r = await anon.get(p, { noOrigin: true });
        assert.equal(r.status, 200, p);
        assert.equal(r.text, index, p);
        assert.match(r.headers.get('content-type') ?? '', /^text\/html/, p);
        assert.equal(r.headers.get('cache-control'), 'no-cache', p);
      }
    });

    test('error bodies are {error, message} and carry field only with code invalid', async () => {
      const alice = await signup(server);
      assertError(await anon.get('/api/nope'), 404, 'not_found');
      assertError(await anon.get('/api/me'), 401, 'unauthenticated');
      assertError(await anon.post('/api/login', {}, { noOrigin: true }), 403, 'bad_origin');
      assertError(await alice.post('/api/contacts', 'x'), 400, 'bad_json');
      assertError(await new Client(server).post('/api/register', { nick: 'A' }), 400, 'invalid_nick');
      assertError(await anon.post('/api/login', { nick: alice.nick, authKey: 'A'.repeat(43) }), 401, 'invalid_credentials');
      assertError(await alice.get('/api/users/nobody_here'), 404, 'unknown_user');
      assertError(await anon.get('/api/kdf?nick=A'), 400, 'invalid', 'nick');
      assertError(await alice.post('/api/contacts', { nick: 'Not A Nick' }), 400, 'invalid', 'nick');
      assertError(await alice.post('/api/devices', { id: 'x' }), 400, 'invalid', 'id');
    });
  });
});
