/**
 * A refused request changes nothing (docs/API.md): bodies with malformed framing, sent over raw
 * sockets to the routes that take no body (logout, leave, room delete, device delete, push
 * delete, contact delete) and to one that does (contact add). Whatever the bytes, the answer and
 * the effect agree: an error and nothing stored, or success and the action done (a route
 * without a body ignores one). Never an error with the effect, never a 5xx.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ERROR_STATUS } from '@svc/protocol';
import { addDevice, b64, id16, ORIGIN, rooms, signup, startServer, wk, type Client, type TestServer } from '@svc/testkit/harness';
import { TEST_MODE } from '@svc/testkit/modes';
import { head, rawExchange, type Step } from '../reliability/raw-http.js';
import { StateReader } from '../reliability/snapshot.js';
import { createECDH } from 'node:crypto';

/** Short bounds, so a body that never completes is answered within a second. */
const TIMEOUTS = { headersMs: 500, requestMs: 800, checkEveryMs: 100 };

let server: TestServer;
let port: number;
let state: StateReader;
before(async () => {
  server = await startServer({}, { timeouts: TIMEOUTS });
  // Raw bytes go to one instance directly: the balancer of the two-instance mode re-frames requests.
  port = Number(new URL(server.urls[0]!).port);
  state = new StateReader(server, TEST_MODE === 'sqlite' ? 'sqlite' : 'postgres');
});
after(async () => {
  await server.close();
});

/** A request to send, and how to tell whether its action happened. */
interface Target {
  method: string;
  path: string;
  headers: Record<string, string>;
  /** The JSON the route would take, or `{}` for a route without a body. */
  body: string;
  done(): Promise<boolean>;
}

const cookieOf = (c: Client) => ({ cookie: c.cookie! });
const has = async (c: Client, path: string, pick: (x: Record<string, unknown>) => boolean) =>
  ((await c.get(path)).json as Record<string, unknown>[]).some(pick);

function subscription() {
  const e = createECDH('prime256v1');
  e.generateKeys();
  return {
    subscription: {
      endpoint: `https://push.example.com/wpush/v2/${b64(24)}`,
      keys: { p256dh: e.getPublicKey().toString('base64url'), auth: b64(16) },
    },
  };
}

async function roomOf(owner: Client, member?: Client): Promise<string> {
  const id = id16();
  assert.equal((await owner.post('/api/rooms', { id, name: 'Room', keyId: id16(), keys: [wk(owner.nick)] })).status, 201);
  if (member) {
    const r = await owner.post(`/api/rooms/${id}/members`, {
      add: [member.nick],
      remove: [],
      keyId: id16(),
      keys: [wk(owner.nick), wk(member.nick)],
    });
    assert.equal(r.status, 200, r.text);
  }
  return id;
}

/** Each route in a fresh state where its action has not happened yet. */
const TARGETS: Record<string, () => Promise<Target>> = {
  'POST /api/logout': async () => {
    const a = await signup(server);
    return { method: 'POST', path: '/api/logout', headers: cookieOf(a), body: '{}', done: async () => (await a.get('/api/me')).status === 401 };
  },
  'POST /api/rooms/:id/leave': async () => {
    const [a, b] = [await signup(server), await signup(server)];
    const id = await roomOf(a, b);
    return {
      method: 'POST',
      path: `/api/rooms/${id}/leave`,
      headers: cookieOf(b),
      body: '{}',
      done: async () => !(await rooms(b)).some((r) => r.id === id),
    };
  },
  'DELETE /api/rooms/:id': async () => {
    const a = await signup(server);
    const id = await roomOf(a);
    return {
      method: 'DELETE',
      path: `/api/rooms/${id}`,
      headers: cookieOf(a),
      body: '{}',
      done: async () => !(await rooms(a)).some((r) => r.id === id),
    };
  },
  'DELETE /api/devices/:id': async () => {
    const a = await signup(server);
    const d = await addDevice(a);
    return {
      method: 'DELETE',
      path: `/api/devices/${d}`,
      headers: cookieOf(a),
      body: '{}',
      done: async () => !(await has(a, '/api/devices', (x) => x.id === d)),
    };
  },
  'DELETE /api/devices/:id/push': async () => {
    const a = await signup(server);
    const d = await addDevice(a);
    assert.equal((await a.put(`/api/devices/${d}/push`, subscription(), { device: d })).status, 204);
    const headers = { ...cookieOf(a), 'x-device': d };
    return {
      method: 'DELETE',
      path: `/api/devices/${d}/push`,
      headers,
      body: '{}',
      done: async () => !(await has(a, '/api/devices', (x) => x.id === d && x.push === true)),
    };
  },
  'DELETE /api/contacts/:nick': async () => {
    const [a, b] = [await signup(server), await signup(server)];
    assert.equal((await a.post('/api/contacts', { nick: b.nick })).status, 201);
    return {
      method: 'DELETE',
      path: `/api/contacts/${b.nick}`,
      headers: cookieOf(a),
      body: '{}',
      done: async () => !(await has(a, '/api/contacts', (x) => x.nick === b.nick)),
    };
  },
  // A route that takes a body: a truncated or garbled one must not be half-applied either.
  'POST /api/contacts': async () => {
    const [a, b] = [await signup(server), await signup(server)];
    const body = JSON.stringify({ nick: b.nick });
    return { method: 'POST', path: '/api/contacts', headers: cookieOf(a), body, done: async () => has(a, '/api/contacts', (x) => x.nick === b.nick) };
  },
};

const JSON_TYPE = { 'content-type': 'application/json' };
const chunked = { ...JSON_TYPE, 'transfer-encoding': 'chunked' };
const hex = (s: string) => Buffer.byteLength(s).toString(16);

/** Malformed framings of a body: the head's extra headers and the bytes after the head. */
const FRAMINGS: Record<string, (body: string) => { headers: Record<string, string>; rest: string; close?: boolean }> = {
  'chunked, whole body, then trailing garbage': (b) => ({ headers: chunked, rest: `${hex(b)}\r\n${b}\r\n0\r\n\r\nGARBAGE}}\r\n\r\n` }),
  'chunked, whole body, then trailing garbage after Connection: close': (b) => ({
    headers: chunked,
    rest: `${hex(b)}\r\n${b}\r\n0\r\n\r\nGARBAGE`,
    close: true,
  }),
  'chunked, a chunk size shorter than its data (short body, garbage after it)': (b) => ({ headers: chunked, rest: `1\r\n${b}xx\r\n0\r\n\r\n` }),
  'chunked, a chunk size that is not hex': (b) => ({ headers: chunked, rest: `zz\r\n${b}\r\n0\r\n\r\n` }),
  'chunked, a negative chunk size': (b) => ({ headers: chunked, rest: `-2\r\n${b}\r\n0\r\n\r\n` }),
  'chunked, a chunk size over 64 bits': (b) => ({ headers: chunked, rest: `fffffffffffffffffff\r\n${b}\r\n0\r\n\r\n` }),
  'chunked, a chunk size longer than the data, never completed': (b) => ({ headers: chunked, rest: `ff\r\n${b}\r\n0\r\n\r\n` }),
  'chunked, no last chunk': (b) => ({ headers: chunked, rest: `${hex(b)}\r\n${b}\r\n` }),
  'chunked, a bad chunk extension': (b) => ({ headers: chunked, rest: `${hex(b)};\x01\r\n${b}\r\n0\r\n\r\n` }),
  'Content-Length and chunked together': (b) => ({
    headers: { ...chunked, 'content-length': String(Buffer.byteLength(b)) },
    rest: `${hex(b)}\r\n${b}\r\n0\r\n\r\n`,
  }),
  'Content-Length shorter than the body': (b) => ({ headers: { ...JSON_TYPE, 'content-length': '1' }, rest: b }),
  'Content-Length shorter than the body, Connection: close': (b) => ({ headers: { ...JSON_TYPE, 'content-length': '1' }, rest: b, close: true }),
  'Content-Length longer than the body': (b) => ({ headers: { ...JSON_TYPE, 'content-length': String(Buffer.byteLength(b) + 20) }, rest: b }),
  'trailing garbage after the JSON, inside the declared length': (b) => ({
    headers: { ...JSON_TYPE, 'content-length': String(Buffer.byteLength(b) + 6) },
    rest: `${b}GARBAG`,
    close: true,
  }),
  'trailing garbage after the JSON, past the declared length': (b) => ({
    headers: { ...JSON_TYPE, 'content-length': String(Buffer.byteLength(b)) },
    rest: `${b}GARBAGE\r\n\r\n`,
  }),
  'a body with a wrong content type': (b) => ({
    headers: { 'content-type': 'text/plain', 'content-length': String(Buffer.byteLength(b)) },
    rest: b,
    close: true,
  }),
  'a body with a malformed content type': (b) => ({
    headers: { 'content-type': 'application/json; charset', 'content-length': String(Buffer.byteLength(b)) },
    rest: b,
    close: true,
  }),
  'a body without a content type': (b) => ({ headers: { 'content-length': String(Buffer.byteLength(b)) }, rest: b, close: true }),
};

/** The first answer on the connection is the answer to the request; whatever follows answers the bytes after it. */
async function check(target: Target, framing: string): Promise<void> {
  const f = FRAMINGS[framing]!(target.body);
  const headers = { host: 'svc.test', origin: ORIGIN, ...target.headers, ...f.headers, ...(f.close ? { connection: 'close' } : {}) };
  const steps: Step[] = [head(`${target.method} ${target.path} HTTP/1.1`, headers) + f.rest];
  const before = await state.read();
  const x = await rawExchange(port, steps, { deadlineMs: 4000 });
  const what = `${target.method} ${target.path} with ${framing}`;
  for (const r of x.responses) {
    assert.ok(r.status < 500, `${what}: never a 5xx, got ${r.status} ${r.body}`);
    if (r.status >= 400) assert.equal(ERROR_STATUS[JSON.parse(r.body).error as keyof typeof ERROR_STATUS], r.status, `${what}: ${r.body}`);
  }
  const first = x.responses[0];
  if (!first || first.status >= 400) {
    await state.assertUnchanged(before, `${what}: answered ${first?.status ?? 'nothing'}, so nothing may change`);
    assert.equal(await target.done(), false, what);
  } else {
    assert.ok(first.status >= 200 && first.status < 300, `${what}: ${first.status}`);
    assert.equal(await target.done(), true, `${what}: answered ${first.status}, so the action is done`);
  }
}

describe(`malformed framing: the answer and the effect agree (${TEST_MODE})`, () => {
  for (const route of Object.keys(TARGETS)) {
    test(`${route}: every malformed framing answers an error and changes nothing, or succeeds and does the action`, async () => {
      for (const framing of Object.keys(FRAMINGS)) await check(await TARGETS[route]!(), framing);
    });
  }

  test('a leave sent chunked with trailing garbage answers 204 first, then 400 bad_json for the garbage, and the caller has left', async () => {
    const target = await TARGETS['POST /api/rooms/:id/leave']!();
    const headers = { host: 'svc.test', origin: ORIGIN, ...target.headers, ...chunked };
    const x = await rawExchange(port, [head(`POST ${target.path} HTTP/1.1`, headers) + '2\r\n{}\r\n0\r\n\r\nGARBAGE'], { deadlineMs: 4000 });
    assert.deepEqual(
      x.responses.map((r) => r.status),
      [204, 400],
    );
    assert.equal(JSON.parse(x.responses[1]!.body).error, 'bad_json');
    assert.equal(await target.done(), true);
  });

  test('a body that never completes is answered 400 bad_json once the request time runs out, and the route never runs', async () => {
    const target = await TARGETS['POST /api/rooms/:id/leave']!();
    const headers = { host: 'svc.test', origin: ORIGIN, ...target.headers, ...JSON_TYPE, 'content-length': '50' };
    const x = await rawExchange(port, [head(`POST ${target.path} HTTP/1.1`, headers) + '{}'], { deadlineMs: 4000 });
    assert.equal(x.responses[0]?.status, 400);
    assert.equal(JSON.parse(x.responses[0].body).error, 'bad_json');
    assert.equal(await target.done(), false);
  });
});
