/**
 * The request log (docs/API.md): one JSON line per
 * request with time, method, status, duration in ms and, for /api/ paths, the route template;
 * never the concrete path, IP, nick, query, cookie, header values or bodies.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Client,
  Stream,
  addDevice,
  b64,
  ct,
  dmBody,
  id16,
  iv,
  nick,
  registerBody,
  startServer,
  type Res,
  type TestServer,
} from '@svc/testkit/harness';

type Line = Record<string, unknown>;

const REAL_IP = '198.51.100.99';
const PEER_IP = '127.0.0.1';

describe('request log', () => {
  let server: TestServer;
  /** Every value that must never reach the log. */
  const secrets = new Set<string>([REAL_IP, 'qsecret-value', 'hdrsecret-value', 'bodysecret-room-name']);

  before(async () => {
    server = await startServer();
  });
  after(async () => {
    await server.close();
  });

  const requestLines = (): Line[] => server.logs.filter((l) => 'method' in l && 'status' in l);

  /** Runs `fn`, waits for its log line, and checks that exactly one request line was added. */
  async function oneLine<T>(fn: () => Promise<T>): Promise<{ line: Line; result: T }> {
    const before = requestLines().length;
    const result = await fn();
    const deadline = Date.now() + 2000;
    while (requestLines().length < before + 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 30));
    const added = requestLines().slice(before);
    assert.equal(added.length, 1, `one log line per request, got ${JSON.stringify(added)}`);
    return { line: added[0]!, result };
  }

  function expectLine(line: Line, method: string, status: number, route?: string): void {
    assert.equal(line.method, method, JSON.stringify(line));
    assert.equal(line.status, status, JSON.stringify(line));
    assert.equal(typeof line.ms, 'number', JSON.stringify(line));
    assert.ok(Number.isFinite(line.ms) && (line.ms as number) >= 0);
    assert.ok('time' in line, 'the line carries its time');
    if (route !== undefined) assert.equal(line.route, route, JSON.stringify(line));
  }

  /** A client whose requests carry an X-Real-IP and a custom header, as through a proxy. */
  function client(): Client {
    const c = new Client(server);
    const req = c.req.bind(c);
    c.req = (method, path, o = {}) =>
      req(method, path, { ...o, headers: { 'x-real-ip': REAL_IP, 'x-custom': 'hdrsecret-value', ...(o.headers ?? {}) } });
    return c;
  }

  async function account(): Promise<Client> {
    const n = nick('lognick');
    const body = registerBody(n);
    const c = client();
    const r = await c.post('/api/register', body);
    assert.equal(r.status, 201);
    c.nick = n;
    c.authKey = body.authKey;
    secrets.add(n).add(body.authKey).add(c.cookie!.slice('svc_session='.length));
    return c;
  }

  function track(r: Res): Res {
    const m = /svc_session=([^;]+)/.exec(r.headers.get('set-cookie') ?? '');
    if (m) secrets.add(m[1]!);
    return r;
  }

  test('each public /api/ request gives one line with method, status, ms and the route template', async () => {
    const anon = client();
    const n = nick('lognick');
    secrets.add(n);
    expectLine((await oneLine(() => anon.get('/api/config'))).line, 'GET', 200, '/api/config');
    expectLine((await oneLine(() => anon.get(`/api/kdf?nick=${n}&extra=qsecret-value`))).line, 'GET', 200, '/api/kdf');
    expectLine((await oneLine(() => anon.get('/api/kdf?nick=NOT_A_NICK_qsecret-value'))).line, 'GET', 400, '/api/kdf');
    const body = registerBody(n);
    secrets.add(body.authKey);
    const reg = await oneLine(() => client().post('/api/register', body).then(track));
    expectLine(reg.line, 'POST', 201, '/api/register');
    const login = await oneLine(() => client().post('/api/login', { nick: n, authKey: body.authKey }).then(track));
    expectLine(login.line, 'POST', 200, '/api/login');
    expectLine((await oneLine(() => client().post('/api/login', { nick: n, authKey: b64(32) }))).line, 'POST', 401, '/api/login');
  });

  test('each session /api/ request gives one line whose route is the template, never the concrete path', async () => {
    const alice = await account();
    const bob = await account();
    const dev = `dev-log-${b64(9)}`;
    const dev2 = `dev-log-${b64(9)}`;
    const room = id16();
    secrets.add(dev).add(dev2).add(room);
    expectLine((await oneLine(() => alice.get('/api/me'))).line, 'GET', 200, '/api/me');
    expectLine((await oneLine(() => alice.get(`/api/users/${bob.nick}`))).line, 'GET', 200, '/api/users/:nick');
    expectLine((await oneLine(() => alice.get(`/api/users/${nick('lognick')}`))).line, 'GET', 404, '/api/users/:nick');
    expectLine((await oneLine(() => alice.post('/api/devices', { id: dev }))).line, 'POST', 201, '/api/devices');
    expectLine((await oneLine(() => bob.post('/api/devices', { id: dev2 }))).line, 'POST', 201, '/api/devices');
    expectLine(
      (await oneLine(() => alice.put(`/api/devices/${dev}/push`, { subscription: {} }, { device: dev }))).line,
      'PUT',
      400,
      '/api/devices/:id/push',
    );
    expectLine((await oneLine(() => alice.del(`/api/devices/${dev}/push`, undefined, { device: dev }))).line, 'DELETE', 204, '/api/devices/:id/push');
    expectLine((await oneLine(() => alice.post('/api/contacts', { nick: bob.nick }))).line, 'POST', 201, '/api/contacts');
    expectLine((await oneLine(() => alice.del(`/api/contacts/${bob.nick}`))).line, 'DELETE', 204, '/api/contacts/:nick');
    const key = (to: string) => ({ to, iv: iv(), ct: ct() });
    const rc = await oneLine(() =>
      alice.post('/api/rooms', { id: room, name: 'bodysecret-room-name', keyId: id16(), keys: [key(alice.nick)] }, { device: dev }),
    );
    expectLine(rc.line, 'POST', 201, '/api/rooms');
    const mem = await oneLine(() =>
      alice.post(`/api/rooms/${room}/members`, { add: [bob.nick], remove: [], keyId: id16(), keys: [key(alice.nick), key(bob.nick)] }),
    );
    expectLine(mem.line, 'POST', 200, '/api/rooms/:id/members');
    expectLine((await oneLine(() => alice.get('/api/rooms'))).line, 'GET', 200, '/api/rooms');
    const sent = await oneLine(() => alice.post('/api/messages', dmBody(bob.nick), { device: dev }));
    expectLine(sent.line, 'POST', 202, '/api/messages');
    secrets.add(sent.result.json.id);
    expectLine((await oneLine(() => bob.post(`/api/rooms/${room}/leave`, undefined, { device: dev2 }))).line, 'POST', 204, '/api/rooms/:id/leave');
    expectLine((await oneLine(() => alice.del(`/api/rooms/${room}`))).line, 'DELETE', 204, '/api/rooms/:id');
    expectLine((await oneLine(() => bob.post('/api/ack', { ids: [sent.result.json.id] }, { device: dev2 }))).line, 'POST', 204, '/api/ack');
    expectLine((await oneLine(() => alice.get('/api/devices'))).line, 'GET', 200, '/api/devices');
    expectLine((await oneLine(() => alice.del(`/api/devices/${dev}`))).line, 'DELETE', 204, '/api/devices/:id');
    expectLine((await oneLine(() => alice.get('/api/contacts'))).line, 'GET', 200, '/api/contacts');
    expectLine((await oneLine(() => alice.post('/api/logout'))).line, 'POST', 204, '/api/logout');
  });

  test('refused requests give one line each with their status', async () => {
    const anon = client();
    const alice = await account();
    expectLine((await oneLine(() => anon.get('/api/me'))).line, 'GET', 401, '/api/me');
    expectLine((await oneLine(() => alice.post('/api/contacts', 'not json'))).line, 'POST', 400, '/api/contacts');
    const ghost = nick('lognick');
    secrets.add(ghost);
    const nf = await oneLine(() => anon.get(`/api/unknown/${ghost}?q=qsecret-value`));
    expectLine(nf.line, 'GET', 404);
    const bo = await oneLine(() => anon.post('/api/register', registerBody(ghost), { headers: { origin: 'http://evil-origin.example' } }));
    expectLine(bo.line, 'POST', 403);
    secrets.add('evil-origin.example');
    expectLine((await oneLine(() => alice.req('PATCH', `/api/users/${ghost}`, { body: {} }))).line, 'PATCH', 404);
  });

  test('the event stream gives one line with route /api/events', async () => {
    const alice = await account();
    const dev = await addDevice(alice);
    secrets.add(dev);
    const { line } = await oneLine(async () => {
      const s = await Stream.open(alice, dev);
      assert.ok(await s.ready());
      s.close();
    });
    expectLine(line, 'GET', 200, '/api/events');
    const refused = await oneLine(() => Stream.open(client(), dev));
    expectLine(refused.line, 'GET', 401, '/api/events');
  });

  test('/healthz and static files give one line each', async () => {
    const anon = client();
    expectLine((await oneLine(() => anon.get('/healthz'))).line, 'GET', 200);
    expectLine((await oneLine(() => anon.get('/'))).line, 'GET', 200);
    secrets.add('clientroute-secret');
    expectLine((await oneLine(() => anon.get('/chat/clientroute-secret?q=qsecret-value'))).line, 'GET', 200);
  });

  test('no log line of the run holds a nick, device id, room id, message id, query string, cookie, key, header value, body or client IP', async () => {
    assert.ok(server.logs.length > 40, 'the run produced log lines');
    const all = server.logs.map((l) => JSON.stringify(l));
    for (const s of secrets) {
      const hit = all.find((l) => l.includes(s));
      assert.equal(hit, undefined, `log holds "${s}": ${hit}`);
    }
    for (const l of requestLines().map((x) => JSON.stringify(x))) {
      assert.ok(!l.includes(PEER_IP), `request line holds the peer IP: ${l}`);
      assert.ok(!l.includes('svc_session'), `request line holds the cookie: ${l}`);
      assert.ok(!l.includes('?'), `request line holds a query string: ${l}`);
    }
  });
});
