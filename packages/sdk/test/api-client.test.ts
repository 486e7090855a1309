/** ApiClient: a method for every route of ROUTES, errors that say what to do next, the corrected clock, the cookie jar, the SSE parser. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ROUTES } from '@svc/protocol';
import { ApiClient, cookieFetch, SdkError, SseParser, type SseMessage } from '../src/index.js';

interface Call {
  url: string;
  method: string;
  headers: Headers;
  body: string | undefined;
}

function fakeFetch(answer: (c: Call) => Response = () => Response.json({})): {
  calls: Call[];
  fetch: (u: string, i?: RequestInit) => Promise<Response>;
} {
  const calls: Call[] = [];
  return {
    calls,
    fetch: async (url, init = {}) => {
      const c = { url, method: init.method ?? 'GET', headers: new Headers(init.headers), body: init.body as string | undefined };
      calls.push(c);
      return answer(c);
    },
  };
}

const sample: Record<string, unknown[]> = {
  kdf: ['alice'],
  register: [{}],
  login: [{}],
  deleteMe: ['k'],
  changePassword: [{}],
  user: ['bob'],
  addDevice: ['dev-00001'],
  deleteDevice: ['dev-00002'],
  setPush: [{ endpoint: 'https://push.example/x', keys: { p256dh: 'a', auth: 'b' } }, 'dev-00003'],
  deletePush: ['dev-00003'],
  addContact: ['bob'],
  deleteContact: ['bob'],
  createRoom: [{}],
  changeMembers: ['room1', {}],
  leaveRoom: ['room1'],
  deleteRoom: ['room1'],
  sendMessage: [{}],
  ack: [['x']],
  openEvents: [],
  uploadAttachmentPart: ['att1', 0, 'AAAA'],
  finishAttachment: ['att1', {}],
  downloadAttachment: ['att1'],
  deleteAttachment: ['att1'],
};

test('every route of the protocol table has an ApiClient method that calls exactly that route', async () => {
  for (const r of ROUTES) {
    const name = r.name;
    const f = fakeFetch((c) =>
      c.method === 'POST' && c.url.endsWith('/api/devices') ? Response.json({ id: 'x', createdAt: 1 }, { status: 201 }) : Response.json({}),
    );
    const api = new ApiClient({ baseUrl: 'http://svc.test', fetch: f.fetch, origin: 'http://svc.test', device: 'dev-self-1' });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    await (api as any)[name](...(sample[name] ?? []));
    assert.equal(f.calls.length, 1, name);
    const c = f.calls[0]!;
    assert.equal(c.method, r.method, name);
    const path = new URL(c.url).pathname;
    const re = new RegExp('^' + r.path.replace(/:[a-z]+/g, '[^/]+') + '$');
    assert.match(path, re, name);
    assert.equal(c.headers.get('origin'), 'http://svc.test');
    if (r.device === 'required') assert.equal(c.headers.get('x-device'), 'dev-self-1', name);
    if (r.device === 'none') assert.equal(c.headers.get('x-device'), null, name);
    for (const q of r.query) assert.ok(new URL(c.url).searchParams.has(q), `${name} sends ?${q}`);
    if (c.body !== undefined) assert.equal(c.headers.get('content-type'), 'application/json');
  }
});

test('a refusal becomes SdkError with code, status, field, retryAfter and the next step', async () => {
  const answers: Response[] = [
    Response.json({ error: 'invalid', message: 'x', field: 'name' }, { status: 400 }),
    Response.json({ error: 'rate_limited', message: 'x' }, { status: 429, headers: { 'retry-after': '7' } }),
    Response.json({ error: 'unauthenticated', message: 'x' }, { status: 401 }),
    new Response('<html>', { status: 502 }),
  ];
  const f = fakeFetch(() => answers.shift()!);
  const api = new ApiClient({ fetch: f.fetch });
  await assert.rejects(api.rooms(), (e: SdkError) => e.code === 'invalid' && e.status === 400 && e.field === 'name' && e.next === 'fix_input');
  await assert.rejects(
    api.rooms(),
    (e: SdkError) => e.code === 'rate_limited' && e.retryAfter === 7 && e.next === 'retry_later' && /7 s/.test(e.message),
  );
  await assert.rejects(api.rooms(), (e: SdkError) => e.code === 'unauthenticated' && e.next === 'log_in');
  await assert.rejects(api.rooms(), (e: SdkError) => e.code === 'bad_response' && e.status === 502);
  const down = new ApiClient({ fetch: async () => Promise.reject(new TypeError('fetch failed')) });
  await assert.rejects(down.rooms(), (e: SdkError) => e.code === 'network' && e.next === 'retry');
});

test('logout treats 401 unauthenticated as success', async () => {
  const f = fakeFetch(() => Response.json({ error: 'unauthenticated', message: 'x' }, { status: 401 }));
  await new ApiClient({ fetch: f.fetch }).logout();
});

test('calls that need X-Device refuse to go without one', async () => {
  const f = fakeFetch();
  const api = new ApiClient({ fetch: f.fetch });
  await assert.rejects(api.ack(['a']), { code: 'not_ready' });
  assert.equal(f.calls.length, 0);
});

test('the clock follows the Date header of responses: now() is corrected, ULIDs carry corrected time', async () => {
  const skew = -3_600_000; // the device clock is an hour slow
  const f = fakeFetch(() => Response.json({}, { headers: { date: new Date(Date.now()).toUTCString() } }));
  const api = new ApiClient({ fetch: f.fetch, clock: () => Date.now() + skew });
  assert.ok(Math.abs(api.now() - Date.now()) > 3_000_000);
  await api.config();
  assert.ok(Math.abs(api.now() - Date.now()) < 2000, `off by ${api.now() - Date.now()}`);
  assert.ok(api.clock.synced);
});

test('cookieFetch keeps the svc_session cookie and drops it when the service clears it', async () => {
  const seen: (string | null)[] = [];
  const answers = [
    new Response(null, { status: 204, headers: { 'set-cookie': 'svc_session=abc; Path=/; HttpOnly; SameSite=Strict; Max-Age=2592000' } }),
    new Response(null, { status: 204 }),
    new Response(null, { status: 204, headers: { 'set-cookie': 'svc_session=; Path=/; Max-Age=0' } }),
    new Response(null, { status: 204 }),
  ];
  const f = cookieFetch(async (_u, init) => {
    seen.push(new Headers(init?.headers).get('cookie'));
    return answers.shift()!;
  });
  for (let i = 0; i < 4; i++) await f('http://x/');
  assert.deepEqual(seen, [null, 'svc_session=abc', 'svc_session=abc', null]);
});

test('the SSE parser reads event, data, id and comments across chunk boundaries and line-end styles', () => {
  const got: SseMessage[] = [];
  const comments: string[] = [];
  const p = new SseParser(
    (m) => got.push(m),
    (c) => comments.push(c),
  );
  const text = ': ping\n\nevent: msg\nid: 01A\ndata: {"a":\ndata: 1}\n\nevent: ready\r\ndata: {}\r\n\r\ndata:x\r\rid\n\n';
  for (const ch of text) p.push(ch);
  assert.deepEqual(comments, ['ping']);
  assert.deepEqual(got, [
    { event: 'msg', data: '{"a":\n1}', id: '01A' },
    { event: 'ready', data: '{}', id: undefined },
    { event: 'message', data: 'x', id: undefined },
  ]);
});
