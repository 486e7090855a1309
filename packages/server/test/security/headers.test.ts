/**
 * Every response carries the security headers (docs/API.md): over every route of the
 * protocol's ROUTES table, answered and refused in each way the pipeline refuses (origin,
 * session, shape, rights, rate limit, a 500), plus the answers outside the routes. The generated
 * requests of test/reliability/fuzz-routes.test.ts and the raw ones of raw-input.test.ts check
 * the same on every answer they get; test/api/pipeline.test.ts covers static files and /healthz.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROUTES } from '@svc/protocol';
import { SECURITY_HEADERS } from '../../src/http/headers.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import type { Store } from '../../src/store/types.js';
import { Client, addDevice, id16, nick, signup, startServer, type Res, type TestServer } from '@svc/testkit/harness';

function pathOf(template: string, c: Client, device: string): string {
  return template.replace(':nick', c.nick).replace(':id', template.startsWith('/api/rooms') ? id16() : device);
}

function expectHeaders(r: Res, what: string): void {
  for (const [k, v] of Object.entries(SECURITY_HEADERS)) assert.equal(r.headers.get(k), v, `${k} on ${what} (${r.status})`);
  if (r.status >= 400) {
    assert.equal(r.headers.get('content-type'), 'application/json; charset=utf-8', what);
    assert.equal(r.headers.get('cache-control'), 'no-store', what);
  }
}

describe('security headers on every route and every kind of answer', () => {
  let server: TestServer;
  let store: Store;
  let failing = false;
  const dir = mkdtempSync(join(tmpdir(), 'svc-headers-'));

  before(async () => {
    // A store that can be made to fail, to see the headers of a 500 too.
    const real = SqliteStore.open(join(dir, 'svc.db'));
    store = new Proxy(real, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver) as unknown;
        if (typeof v !== 'function') return v;
        return (...args: unknown[]) => {
          if (failing && prop !== 'close') throw new Error('store down (test)');
          return (v as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    server = await startServer({ LIMIT_WRITES_PER_MIN: '200' }, { store }, 'sqlite');
  });
  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('every route: answered, without a session, from a foreign origin, with a bad body, with a foreign device, and failing (500)', async () => {
    const alice = await signup(server, nick('hdr'));
    const dev = await addDevice(alice);
    const bob = await signup(server, nick('hdr'));
    const bobDev = await addDevice(bob);
    const anon = new Client(server);
    const seen = new Set<number>();
    for (const spec of ROUTES) {
      const path =
        pathOf(spec.path, alice, dev) + (spec.path === '/api/kdf' ? `?nick=${alice.nick}` : spec.path === '/api/events' ? `?device=${dev}` : '');
      const what = `${spec.method} ${spec.path}`;
      const isStream = spec.path === '/api/events';
      const method = isStream ? 'HEAD' : spec.method;
      const variants: [string, Res][] = [
        ['no session', await anon.req(method, path, spec.method === 'GET' ? {} : { body: {} })],
        ['foreign origin', await alice.req(method, path, { headers: { origin: 'http://evil.test' } })],
        ['cross-site fetch', await alice.req(method, path, { headers: { 'sec-fetch-site': 'cross-site' } })],
        ['bad body', await alice.req(method, path, { device: dev, ...(spec.method === 'GET' ? {} : { body: '{"x":' }) })],
        ['foreign device', await alice.req(method, path, { device: bobDev, ...(spec.method === 'GET' ? {} : { body: { id: 'x' } }) })],
        ['unsupported method', await alice.req(spec.method === 'GET' ? 'PATCH' : 'OPTIONS', path)],
      ];
      for (const [v, r] of variants) {
        seen.add(r.status);
        expectHeaders(r, `${what} (${v})`);
      }
      failing = true;
      try {
        const r = await alice.req(method, path, { device: dev, ...(spec.method === 'GET' ? {} : { body: {} }) });
        seen.add(r.status);
        expectHeaders(r, `${what} (store failing)`);
      } finally {
        failing = false;
      }
    }
    for (const status of [400, 401, 403, 404, 500]) assert.ok(seen.has(status), `a ${status} was seen`);
  });

  test('429 rate_limited, too_large and not_found carry them too', async () => {
    const c = await signup(server, nick('hdr'));
    let r: Res | null = null;
    for (let i = 0; i < 201 && r?.status !== 429; i++) r = await c.post('/api/contacts', { nick: 'not a nick' });
    assert.equal(r!.status, 429);
    expectHeaders(r!, '429');
    const big = await c.post('/api/contacts', { nick: 'x'.repeat(40_000) });
    assert.equal(big.status, 413);
    expectHeaders(big, '413');
    const nf = await c.get('/api/no/such/route');
    assert.equal(nf.status, 404);
    expectHeaders(nf, '404');
    const badUrl = await c.get('/api/users/%E0%A4%A');
    assert.ok(badUrl.status < 500);
    expectHeaders(badUrl, 'bad percent-encoding');
  });

  test('every kind of answer carries Cross-Origin-Opener-Policy: same-origin', async () => {
    const c = await signup(server, nick('hdr'));
    const dev = await addDevice(c);
    const anon = new Client(server);
    const answers: [string, Res][] = [
      ['GET /api/config', await anon.get('/api/config')],
      ['GET /healthz', await anon.get('/healthz')],
      ['GET / (the app)', await anon.get('/')],
      ['GET a page path', await anon.get('/some/page')],
      ['GET /api/me without a session', await anon.get('/api/me')],
      ['GET /api/me', await c.get('/api/me')],
      ['a foreign origin', await c.post('/api/contacts', { nick: 'x' }, { headers: { origin: 'http://evil.test' } })],
      ['a bad body', await c.post('/api/contacts', '{"x":')],
      ['an unknown route', await c.get('/api/no/such/route')],
      ['a body over 32 KiB', await c.post('/api/contacts', { nick: 'x'.repeat(40_000) })],
      ['HEAD /api/events', await c.req('HEAD', `/api/events?device=${dev}`)],
    ];
    for (const [what, r] of answers) assert.equal(r.headers.get('cross-origin-opener-policy'), 'same-origin', `${what} (${r.status})`);
  });
});
