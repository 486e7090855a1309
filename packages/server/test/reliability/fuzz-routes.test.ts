/**
 * Bad input never hurts (issue 6, part 1): property-based requests over every route of the
 * protocol's ROUTES table, with generated and mutated bodies, headers, paths, query strings and
 * cookies. Every answer must be timely, never a 500, in the error form `{error, message, field?}`
 * with a code of the catalog and its status, carry the security headers, and a refused request
 * must leave the stored state exactly as it was. Runs on SQLite and on PostgreSQL.
 *
 * A failing run prints fast-check's seed and the request; `FUZZ_SEED=<seed>` replays it (a long
 * run's rounds have seeds of their own: the one printed replays the failing round). Each run
 * prints its row of docs/RELIABILITY.md's fuzz table.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { ERROR_STATUS, ROUTE_PIPELINE_ERRORS, ROUTES, routeErrors, type ErrorCode, type NamedRoute, type RouteSpec } from '@svc/protocol';
import { SECURITY_HEADERS } from '../../src/http/headers.js';
import {
  ORIGIN,
  b64,
  ct,
  id16,
  iv,
  kdf,
  nick,
  publicKey,
  ulid,
  userWithDevices,
  wk,
  startServer,
  type Client,
  type TestServer,
} from '@svc/testkit/harness';
import type { TestMode } from '@svc/testkit/modes';
import { printRow } from './delivery-ledger.js';
import { StateReader } from './snapshot.js';

/**
 * Requests per backend: FUZZ_RUNS (`npm run soak:fuzz` sets 100,000); by default enough to meet
 * every route many times in a few seconds each, for `npm test`.
 */
const RUNS: Record<'sqlite' | 'postgres', number> = process.env.FUZZ_RUNS
  ? { sqlite: Number(process.env.FUZZ_RUNS), postgres: Number(process.env.FUZZ_RUNS) }
  : { sqlite: 400, postgres: 200 };
if (!Number.isInteger(RUNS.sqlite) || RUNS.sqlite < 1) throw new Error('FUZZ_RUNS must be a whole number of at least 1');
/**
 * Runs per server: the state snapshot before each request reads every stored row, so a long run
 * is cut into rounds, each on a fresh server and store, to keep that read small.
 */
const ROUND = 1000;
const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined;
/**
 * Rounds that run at once, each on its own server and store (FUZZ_LANES, 1 by default): a round
 * spends much of its time waiting for its database, which another round can use.
 */
const LANES = Math.max(1, Number(process.env.FUZZ_LANES || 1));
/**
 * A request that takes longer than this is a hang: 5 s, the fail-fast bound of the service.
 * FUZZ_HANG_MS raises it for long runs with several rounds at once (FUZZ_LANES), whose clients and
 * servers share this process's one thread: on a loaded machine a request there also waits for the
 * other rounds' work, which is not the service hanging.
 */
const HANG_MS = Number(process.env.FUZZ_HANG_MS || 5000);
/** A query parameter sent on many requests, to prove that query strings never reach the log. */
const QUERY_MARKER = `zzq${randomBytes(6).toString('hex')}`;

interface Fixture {
  a: Client;
  aDev: string;
  b: Client;
  bDev: string;
  roomId: string;
  keyId: string;
  /** a's upload of one part, not finished, and the bytes of that part. */
  uploadId: string;
  part: Buffer;
  /** a's finished attachment. */
  attachmentId: string;
}

/** Two accounts with a device each, a room of both with a key, and a contact: what valid requests refer to. */
async function makeFixture(server: TestServer): Promise<Fixture> {
  const {
    c: a,
    devices: [aDev],
  } = await userWithDevices(server, 1);
  const {
    c: b,
    devices: [bDev],
  } = await userWithDevices(server, 1);
  const roomId = id16();
  const keyId = id16();
  assert.equal((await a.post('/api/rooms', { id: roomId, name: 'fuzz room', keyId: id16(), keys: [wk(a.nick)] }, { device: aDev })).status, 201);
  assert.equal((await a.post(`/api/rooms/${roomId}/members`, { add: [b.nick], remove: [], keyId, keys: [wk(a.nick), wk(b.nick)] })).status, 200);
  assert.equal((await a.post('/api/contacts', { nick: b.nick })).status, 201);
  const part = randomBytes(100);
  const uploadId = id16();
  assert.equal((await a.put(`/api/attachments/${uploadId}/parts/0`, { data: part.toString('base64url') })).status, 204);
  const attachmentId = id16();
  assert.equal((await a.put(`/api/attachments/${attachmentId}/parts/0`, { data: part.toString('base64url') })).status, 204);
  assert.equal((await a.post(`/api/attachments/${attachmentId}/finish`, finishOf(part))).status, 201);
  return { a, aDev: aDev!, b, bDev: bDev!, roomId, keyId, uploadId, part, attachmentId };
}

/** The finish of a one-part attachment holding `part`. */
const finishOf = (part: Buffer) => ({ parts: 1, size: part.length, sha256: createHash('sha256').update(part).digest('base64url') });

// ---- values -------------------------------------------------------------------------------

/** A numeric literal JSON.stringify cannot write (1e400, 30 digits…), put in place when the body is serialised. */
const NUM = '\u0001NUM:';
const hugeNumber = fc
  .constantFrom('1e400', '-1e400', '123456789012345678901234567890', '1e-400', '-0', '9007199254740993', '1E+2', '0.1e1')
  .map((n) => NUM + n);

const nastyString = fc.constantFrom(
  '\u202e',
  'evil\u202dname',
  '\u2066x\u2069',
  '\u2067\u2068',
  '\u202a\u202b\u202c',
  '\ud800',
  'x\udfff',
  '\udc00\ud800',
  '\u0000',
  'a\u0000b',
  '\u200f\u200e',
  '\ufeff',
  '\u0085\u2028\u2029',
  '../../etc/passwd',
  '%00',
  '%2e%2e%2f',
  '<script>alert(1)</script>',
  "' OR 1=1 --",
  '"; DROP TABLE accounts; --',
  '\r\nSet-Cookie: x=1',
  '__proto__',
  'constructor',
  'x'.repeat(40_000),
  'é'.repeat(17_000),
  '😀'.repeat(9_000),
);

const weirdString = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
  { weight: 3, arbitrary: nastyString },
);

const weirdValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: weirdString },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.double() },
  { weight: 2, arbitrary: hugeNumber },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false, 0, -1, 1e308, [], {}) },
  { weight: 1, arbitrary: fc.array(weirdString, { maxLength: 4 }) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.dictionary(weirdString, weirdString, { maxKeys: 3 }) },
);

/** What fetch may put in a header: printable ASCII (raw-input.test.ts sends the rest over a socket). */
const headerText = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 40 });

// ---- request plans ------------------------------------------------------------------------

/** A path parameter or query value: a real one of the fixture, a fresh valid one, or something odd. */
type ValuePick = { kind: 'fixture'; which: number } | { kind: 'fresh'; which: number } | { kind: 'odd'; value: string; encode: boolean };
const valuePick: fc.Arbitrary<ValuePick> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('fixture' as const), which: fc.nat(9) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('fresh' as const), which: fc.nat(9) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('odd' as const), value: weirdString, encode: fc.boolean() }) },
);

type BodyPlan =
  | { kind: 'template' }
  | { kind: 'set'; field: number; value: unknown }
  | { kind: 'delete'; field: number }
  | { kind: 'extra'; key: string; value: unknown }
  | { kind: 'whole'; value: unknown }
  | { kind: 'text'; text: string }
  | { kind: 'deep'; depth: number; shape: 'array' | 'object'; at: 'top' | 'field' }
  | { kind: 'none' };

const bodyPlan: fc.Arbitrary<BodyPlan> = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ kind: 'template' as const }) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('set' as const), field: fc.nat(9), value: weirdValue }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), field: fc.nat(9) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('extra' as const),
      key: fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'from', 'ts', 'invite'),
      value: weirdValue,
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('whole' as const), value: weirdValue }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('text' as const),
      text: fc.oneof(
        weirdString,
        fc.constantFrom(
          '{',
          '{"a":',
          '[1,]',
          '{"a":1}{"b":2}',
          'nul',
          '{"__proto__":{"polluted":1}}',
          '{"constructor":{"prototype":{"polluted":1}}}',
        ),
      ),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('deep' as const),
      depth: fc.integer({ min: 50, max: 5000 }),
      shape: fc.constantFrom('array' as const, 'object' as const),
      at: fc.constantFrom('top' as const, 'field' as const),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'none' as const }) },
);

interface Plan {
  route: number;
  method: string | null;
  params: ValuePick[];
  query: { nick: ValuePick; device: ValuePick; extra: string | null; repeat: boolean; marker: boolean };
  /** A header value, none, or 'ok' for the configured origin. */
  origin: string | null;
  site: string | null;
  device: 'none' | 'own' | 'other' | { odd: string };
  contentType: string | null;
  cookie: 'a' | 'b' | 'none' | 'forged' | 'double' | { odd: string };
  body: BodyPlan;
}

const plan: fc.Arbitrary<Plan> = fc.record({
  route: fc.nat(ROUTES.length - 1),
  method: fc.oneof(
    { weight: 9, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.constantFrom('GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS') },
  ),
  params: fc.array(valuePick, { minLength: 1, maxLength: 1 }),
  query: fc.record({
    nick: valuePick,
    device: valuePick,
    extra: fc.option(
      fc.constantFrom(
        '__proto__[polluted]=1',
        'constructor[prototype][polluted]=1',
        'a=%zz',
        '%00=%00',
        'x='.concat('y'.repeat(3000)),
        'nick[]=a&nick[]=b',
      ),
      { freq: 3 },
    ),
    repeat: fc.boolean(),
    marker: fc.boolean(),
  }),
  origin: fc.oneof(
    { weight: 8, arbitrary: fc.constant('ok' as const) },
    { weight: 1, arbitrary: fc.constant(null) },
    {
      weight: 1,
      arbitrary: fc.oneof(
        fc.constantFrom('null', 'http://evil.test', `${ORIGIN}/`, ORIGIN.toUpperCase(), `${ORIGIN}:80`, 'https://svc.test'),
        headerText,
      ),
    },
  ),
  site: fc.oneof(
    { weight: 7, arbitrary: fc.constant(null) },
    { weight: 2, arbitrary: fc.constantFrom('same-origin', 'none', 'cross-site', 'same-site') },
    { weight: 1, arbitrary: headerText },
  ),
  device: fc.oneof(
    { weight: 2, arbitrary: fc.constant('none' as const) },
    { weight: 5, arbitrary: fc.constant('own' as const) },
    { weight: 1, arbitrary: fc.constant('other' as const) },
    { weight: 1, arbitrary: fc.record({ odd: headerText }) },
  ),
  contentType: fc.oneof(
    { weight: 8, arbitrary: fc.constant('application/json') },
    { weight: 1, arbitrary: fc.constant(null) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        'application/json; charset=utf-8',
        'APPLICATION/JSON',
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        '',
        'application/jsonx',
        'application/json;;;',
        'application/json; charset=latin1',
      ),
    },
    { weight: 1, arbitrary: headerText },
  ),
  cookie: fc.oneof(
    { weight: 7, arbitrary: fc.constant('a' as const) },
    { weight: 1, arbitrary: fc.constant('b' as const) },
    { weight: 1, arbitrary: fc.constantFrom('none' as const, 'forged' as const, 'double' as const) },
    { weight: 1, arbitrary: fc.record({ odd: headerText }) },
  ),
  body: bodyPlan,
});

// ---- turning a plan into a request -----------------------------------------------------------

function fixtureValue(fx: Fixture, name: string, which: number, path: string): string {
  // The pools differ in length, so that one pick names many pairings of an attachment and a part.
  const attachment = path.startsWith('/api/attachments/');
  const pools: Record<string, string[]> = {
    nick: [fx.b.nick, fx.a.nick, nick('nobody')],
    id: attachment ? [fx.uploadId, fx.attachmentId, fx.roomId] : [fx.aDev, fx.roomId, fx.bDev],
    device: [fx.aDev, fx.bDev],
    n: ['0', '1'],
  };
  const pool = pools[name] ?? [fx.b.nick];
  return pool[which % pool.length]!;
}

function freshValue(name: string, which: number): string {
  if (name === 'nick') return nick('fresh');
  return which % 2 === 0 ? id16() : `dev-fresh-${randomBytes(4).toString('hex')}`;
}

function encodeOdd(v: string, encode: boolean): string {
  if (!encode) return v.replace(/[#?\s]/g, '_');
  try {
    return encodeURIComponent(v);
  } catch {
    return encodeURIComponent(v.replace(/[\ud800-\udfff]/g, '_')) + '%ED%A0%80'; // a lone surrogate, percent-encoded as its raw UTF-8 form
  }
}

function pickValue(fx: Fixture, name: string, p: ValuePick, path = ''): string {
  if (p.kind === 'fixture') return fixtureValue(fx, name, p.which, path);
  if (p.kind === 'fresh') return freshValue(name, p.which);
  return encodeOdd(p.value, p.encode);
}

/** A valid body of each route that takes one, for the fixture's accounts. */
function template(spec: RouteSpec, fx: Fixture): Record<string, unknown> | null {
  switch (`${spec.method} ${spec.path}`) {
    case 'POST /api/register':
      return { nick: nick('reg'), authKey: b64(32), kdf: kdf(), publicKey: publicKey(), encryptedKey: { iv: iv(), ct: ct(48) } };
    case 'POST /api/login':
      return { nick: fx.a.nick, authKey: fx.a.authKey };
    case 'DELETE /api/me':
      return { authKey: fx.a.authKey };
    case 'POST /api/password':
      return { authKey: fx.a.authKey, newAuthKey: b64(32), kdf: kdf(), encryptedKey: { iv: iv(), ct: ct(48) } };
    case 'POST /api/devices':
      return { id: `dev-new-${randomBytes(4).toString('hex')}` };
    case 'PUT /api/devices/:id/push':
      // A literal loopback endpoint: refused by the shape rules, so no push is ever attempted.
      return { subscription: { endpoint: 'https://127.0.0.1/push/x', keys: { p256dh: publicKey(), auth: b64(16) } } };
    case 'POST /api/contacts':
      return { nick: fx.b.nick };
    case 'POST /api/rooms':
      return { id: id16(), name: 'a room', keyId: id16(), keys: [wk(fx.a.nick)] };
    case 'POST /api/rooms/:id/members':
      return { add: [], remove: [], keyId: id16(), keys: [wk(fx.a.nick), wk(fx.b.nick)] };
    case 'POST /api/messages':
      return { id: ulid(), to: { room: fx.roomId }, keyId: fx.keyId, iv: iv(), ct: ct() };
    case 'POST /api/ack':
      return { ids: [ulid()] };
    case 'PUT /api/attachments/:id/parts/:n':
      return { data: fx.part.toString('base64url') };
    case 'POST /api/attachments/:id/finish':
      return finishOf(fx.part);
    default:
      return null;
  }
}

function nested(depth: number, shape: 'array' | 'object'): string {
  return shape === 'array' ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
}

const DEEP_MARK = '\u0001DEEP';

function serialise(v: unknown, deep: string | null): string {
  let text = JSON.stringify(v) ?? 'null';
  text = text.replace(/"\\u0001NUM:([^"]*)"/g, '$1');
  if (deep !== null) text = text.replace(JSON.stringify(DEEP_MARK), deep);
  return text;
}

function buildBody(spec: RouteSpec, fx: Fixture, p: BodyPlan): string | undefined {
  const t = template(spec, fx) ?? {};
  const keys = Object.keys(t);
  switch (p.kind) {
    case 'none':
      return undefined;
    case 'template':
      return serialise(t, null);
    case 'set': {
      if (keys.length === 0) return serialise(p.value, null);
      return serialise({ ...t, [keys[p.field % keys.length]!]: p.value }, null);
    }
    case 'delete': {
      const copy: Record<string, unknown> = { ...t };
      if (keys.length > 0) delete copy[keys[p.field % keys.length]!];
      return serialise(copy, null);
    }
    case 'extra': {
      // Written as text: an object literal with "__proto__" would set the prototype, not a key.
      const inner = serialise(t, null).slice(1, -1);
      return `{${inner}${inner ? ',' : ''}${JSON.stringify(p.key)}:${serialise(p.value, null)}}`;
    }
    case 'whole':
      return serialise(p.value, null);
    case 'text':
      return p.text;
    case 'deep': {
      const deep = nested(p.depth, p.shape);
      if (p.at === 'top' || keys.length === 0) return deep;
      return serialise({ ...t, [keys[p.depth % keys.length]!]: DEEP_MARK }, deep);
    }
  }
}

interface Built {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string | undefined;
  spec: NamedRoute;
}

/**
 * The plan of a well-formed request: the fixture's values in the path, the configured origin, a's
 * session and device, JSON, the route's template body. Without these a request rarely gets past
 * the shape checks to the rules behind them (an attachment part's owner, a finish's hash).
 */
function wellFormed(p: Plan): Plan {
  const pick = p.params[0]!.kind === 'fixture' ? p.params[0]! : { kind: 'fixture' as const, which: 0 };
  return {
    ...p,
    method: null,
    params: [pick],
    query: { ...p.query, nick: pick, device: pick, extra: null, repeat: false },
    origin: 'ok',
    site: null,
    device: 'own',
    contentType: 'application/json',
    cookie: 'a',
    body: { kind: 'template' },
  };
}

/**
 * Routes are taken in turn (the plan's pick only offsets the turn), so every route gets its share
 * of runs; every eighth pass over them, the first included, sends each route a well-formed request.
 */
function build(plan: Plan, fx: Fixture, turn: number): Built {
  const p = Math.floor(turn / ROUTES.length) % 8 === 0 ? wellFormed(plan) : plan;
  const spec = ROUTES[(turn + (p.method === null ? 0 : p.route)) % ROUTES.length]!;
  const method = p.method ?? spec.method;
  let path = spec.path.replace(/:(\w+)/g, (_m, name: string) => pickValue(fx, name, p.params[0]!, spec.path));
  const q: string[] = [];
  if (spec.path === '/api/kdf' || spec.path === '/api/events') {
    const name = spec.path === '/api/kdf' ? 'nick' : 'device';
    const v = pickValue(fx, name, name === 'nick' ? p.query.nick : p.query.device);
    q.push(`${name}=${v}`);
    if (p.query.repeat) q.push(`${name}=${v}`);
  }
  if (p.query.extra) q.push(p.query.extra);
  if (p.query.marker) q.push(`m=${QUERY_MARKER}`);
  if (q.length > 0) path += `?${q.join('&')}`;

  const headers: Record<string, string> = {};
  if (p.origin === 'ok') headers.origin = ORIGIN;
  else if (p.origin !== null) headers.origin = p.origin;
  if (p.site !== null) headers['sec-fetch-site'] = p.site;
  if (p.device === 'own') headers['x-device'] = fx.aDev;
  else if (p.device === 'other') headers['x-device'] = fx.bDev;
  else if (p.device !== 'none') headers['x-device'] = p.device.odd;
  if (p.cookie === 'a' && fx.a.cookie) headers.cookie = fx.a.cookie;
  else if (p.cookie === 'b' && fx.b.cookie) headers.cookie = fx.b.cookie;
  else if (p.cookie === 'forged') headers.cookie = `svc_session=${b64(32)}`;
  else if (p.cookie === 'double') headers.cookie = `svc_session=${b64(32)}; ${fx.a.cookie ?? ''}`;
  else if (typeof p.cookie === 'object') headers.cookie = p.cookie.odd;

  let body = method === 'GET' || method === 'HEAD' ? undefined : buildBody(spec, fx, p.body);
  if (body !== undefined && p.contentType !== null) headers['content-type'] = p.contentType;
  if (body !== undefined && Buffer.byteLength(body) > 32 * 1024 && p.body.kind !== 'text') body = body.slice(0, 40_000);
  return { method, path, headers, body, spec };
}

// ---- checks --------------------------------------------------------------------------------

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  ms: number;
}

async function send(server: TestServer, r: Built): Promise<Answer> {
  const started = performance.now();
  const ctrl = new AbortController();
  const timer = setTimeout(() => ctrl.abort(), HANG_MS);
  try {
    const res = await fetch(server.url + r.path, {
      method: r.method,
      headers: r.headers,
      ...(r.body !== undefined ? { body: r.body } : {}),
      signal: ctrl.signal,
    });
    // An event stream that opened is read no further: its headers are the answer.
    const text = res.headers.get('content-type')?.startsWith('text/event-stream') ? '' : await res.text();
    ctrl.abort();
    return { status: res.status, headers: res.headers, text, ms: performance.now() - started };
  } catch (err) {
    if (ctrl.signal.aborted && performance.now() - started >= HANG_MS - 50)
      throw new Error(`no answer within ${HANG_MS} ms: ${r.method} ${r.path}`, { cause: err });
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/** Each route's path as a pattern, a parameter standing for one path segment (an empty one too: the router matches it, and the route refuses it). */
const ROUTE_PATTERNS = ROUTES.map((spec) => ({ spec, re: new RegExp(`^${spec.path.replace(/:\w+/g, '[^/]*')}$`) }));

/** A path whose percent-escapes decode to UTF-8; any other is an unknown path (docs/API.md). */
function decodable(path: string): boolean {
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * The error codes the request may be answered with: those the routes table lists for the route the
 * server matches (a HEAD is answered by its GET route), or, when no route matches, the pipeline's
 * and `not_found`.
 */
function allowedErrors(r: Built): Set<ErrorCode> {
  const method = r.method === 'HEAD' ? 'GET' : r.method;
  // The path as fetch sends it: the URL parser makes a backslash a slash in an http URL, resolves
  // dot segments and percent-encodes what a path may not hold, so that is what the router sees.
  const path = new URL(r.path, 'http://fuzz.invalid').pathname;
  const matched = decodable(path) ? ROUTE_PATTERNS.find((p) => p.spec.method === method && p.re.test(path)) : undefined;
  return new Set(matched ? routeErrors(matched.spec) : [...ROUTE_PIPELINE_ERRORS, 'not_found']);
}

/** Codes of the pipeline and of the shape checks: an answer with another got to the rules behind them. */
const SHAPE_CODES = new Set<string>([
  ...ROUTE_PIPELINE_ERRORS,
  'invalid',
  'bad_json',
  'not_found',
  'unauthenticated',
  'unknown_device',
  'rate_limited',
]);

function pastShapeChecks(r: Built, a: Answer): boolean {
  if (r.method !== r.spec.method) return false;
  return a.status < 400 || !SHAPE_CODES.has((JSON.parse(a.text) as { error: string }).error);
}

/** The attachment routes that take a body: the generators must get parts and finishes past their shape checks. */
const ATTACHMENT_WRITES = ROUTES.filter((r) => r.feature === 'attachments' && r.method !== 'GET' && r.method !== 'DELETE');

function checkAnswer(r: Built, a: Answer): void {
  const what = `${r.method} ${r.path.slice(0, 200)} → ${a.status} ${a.text.slice(0, 300)}`;
  assert.ok(a.status < 500, `never a 5xx: ${what}`);
  for (const [k, v] of Object.entries(SECURITY_HEADERS)) assert.equal(a.headers.get(k), v, `header ${k}: ${what}`);
  if (a.status < 400) return;
  assert.equal(a.headers.get('content-type'), 'application/json; charset=utf-8', what);
  assert.equal(a.headers.get('cache-control'), 'no-store', what);
  if (r.method === 'HEAD') return;
  const body = JSON.parse(a.text) as Record<string, unknown>;
  const code = body.error as keyof typeof ERROR_STATUS;
  assert.ok(typeof code === 'string' && code in ERROR_STATUS, `a code of the catalog: ${what}`);
  assert.equal(ERROR_STATUS[code], a.status, `the catalog's status for ${code}: ${what}`);
  assert.ok(allowedErrors(r).has(code), `a code the routes table lists for this route: ${what}`);
  assert.equal(typeof body.message, 'string', what);
  const keys = Object.keys(body).sort();
  if (code === 'invalid') {
    assert.deepEqual(keys, ['error', 'field', 'message'], what);
    assert.ok(typeof body.field === 'string' && body.field.length > 0, what);
  } else assert.deepEqual(keys, ['error', 'message'], what);
}

/** Log lines of a run that hold a nick, device id, room id, query string or the client IP it used. */
function leaks(logs: Record<string, unknown>[], used: Set<string>): string[] {
  const out: string[] = [];
  for (const v of [...used, QUERY_MARKER, '127.0.0.1']) {
    // The framework's start line names the server's own listening address, not a client's.
    const line = logs.find((l) => !String(l.msg).startsWith('Server listening at') && JSON.stringify(l).includes(v));
    if (line !== undefined) out.push(`the log holds ${v}: ${JSON.stringify(line)}`);
  }
  for (const l of logs) if ('url' in l || 'req' in l || 'remoteAddress' in l) out.push(JSON.stringify(l));
  return out;
}

/** Routes whose success leaves the fixture's accounts, sessions, devices, room and key usable. */
const KEEPS_FIXTURE = new Set([
  'POST /api/register',
  'POST /api/login',
  'POST /api/devices',
  'PUT /api/devices/:id/push',
  'DELETE /api/devices/:id/push',
  'POST /api/contacts',
  'POST /api/rooms',
  'POST /api/messages',
  'POST /api/ack',
  'PUT /api/attachments/:id/parts/:n',
  'POST /api/attachments/:id/finish',
]);

const STORE_NAME = { sqlite: 'SQLite', postgres: 'PostgreSQL' } as const;

before(() => {
  printRow(['store', 'fuzzed requests', 'routes', '2xx/3xx', '4xx', '5xx', 'crashes', 'time']);
  printRow(['---', '---:', '---', '---:', '---:', '---:', '---:', '---:']);
});

/** FUZZ_STORES=sqlite or postgres runs one backend only (both by default). */
const STORES = (process.env.FUZZ_STORES || 'sqlite,postgres').split(',');

for (const mode of (['sqlite', 'postgres'] as const satisfies readonly TestMode[]).filter((m) => STORES.includes(m))) {
  describe(`bad input never hurts (${mode})`, () => {
    let server: TestServer;
    let state: StateReader;
    let fx: Fixture;
    const protoKeys = Object.getOwnPropertyNames(Object.prototype).sort();
    let used = new Set<string>();
    /** Requests of the last round, whose server the later tests still use. */
    let lastRound = 0;

    interface Lane {
      server: TestServer;
      state: StateReader;
      fx: Fixture;
      used: Set<string>;
    }
    async function lane(): Promise<Lane> {
      const s = await startServer({}, {}, mode);
      return { server: s, state: new StateReader(s, mode), fx: await makeFixture(s), used: new Set() };
    }

    after(async () => {
      await server?.close();
    });

    test(`generated requests over every route: no 5xx, no hang, the error form, and a refused request changes nothing (${RUNS[mode]} runs)`, async () => {
      const perRoute = new Array<number>(ROUTES.length).fill(0);
      const pastShape = new Array<number>(ROUTES.length).fill(0);
      const statuses = { '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 };
      let crashes = 0;
      let claimed = 0;
      const started = performance.now();

      /** One round: a fresh server, `runs` generated requests, then its log is checked and, unless kept, it is closed. */
      async function round(runs: number, keep: boolean): Promise<void> {
        const l = await lane();
        let turn = 0;
        // The state after a refused request is the state before the next one: nothing else writes.
        let known: string | null = null;
        let sinceFixture = 0;
        let passed = false;
        try {
          await fc.assert(
            fc.asyncProperty(plan, async (p) => {
              const r = build(p, l.fx, turn++);
              perRoute[ROUTES.indexOf(r.spec)]!++;
              for (const v of [l.fx.a.nick, l.fx.b.nick, l.fx.aDev, l.fx.bDev, l.fx.roomId]) l.used.add(v);
              const before = known ?? (await l.state.read());
              known = null;
              const a = await send(l.server, r);
              statuses[`${Math.min(5, Math.floor(a.status / 100))}xx` as keyof typeof statuses]++;
              checkAnswer(r, a);
              if (pastShapeChecks(r, a)) pastShape[ROUTES.indexOf(r.spec)]!++;
              if (a.status >= 400) {
                known = await l.state.assertUnchanged(
                  before,
                  `a refused request changed the stored state: ${r.method} ${r.path} → ${a.status} ${a.text}`,
                );
              }
              // A request that did something else (logout, deletion, password change, a key rotation…)
              // may have used up the fixture: later requests get a fresh one, as they do after every 100
              // other successes.
              else if ((r.method !== 'GET' && r.method !== 'HEAD' && !KEEPS_FIXTURE.has(`${r.method} ${r.spec.path}`)) || ++sinceFixture >= 100) {
                l.fx = await makeFixture(l.server);
                sinceFixture = 0;
              }
            }),
            { numRuns: runs, endOnFailure: true, ...(SEED !== undefined ? { seed: SEED } : {}) },
          );
          // The service lives in this process: an uncaught error would end the run, and one that
          // left it unable to answer shows here.
          if (
            !(await fetch(`${l.server.url}/healthz`).then(
              (x) => x.ok,
              () => false,
            ))
          )
            crashes++;
          if (!keep) assert.deepEqual(leaks(l.server.logs, l.used), [], 'the request log holds nothing it must not');
          if (RUNS[mode] > ROUND)
            console.error(`fuzz ${mode}: ${perRoute.reduce((a, b) => a + b, 0)} requests, ${Math.round((performance.now() - started) / 1000)} s`);
          passed = true;
        } finally {
          // A failed round's server is closed too, kept or not: left open it would keep this
          // process, and so the whole test run, waiting for ever after the failure is reported.
          if (!keep || !passed) await l.server.close();
        }
        if (keep) ({ server, state, fx, used } = l);
      }

      // A failing round stops the others from starting new rounds, so the run ends with its failure.
      let failed = false;
      await Promise.all(
        Array.from({ length: LANES }, async () => {
          while (claimed < RUNS[mode] && !failed) {
            const runs = Math.min(ROUND, RUNS[mode] - claimed);
            claimed += runs;
            // The last round's server stays for the tests below.
            const keep = claimed >= RUNS[mode];
            if (keep) lastRound = runs;
            await round(runs, keep).catch((err: unknown) => {
              failed = true;
              throw err;
            });
          }
        }),
      );
      const requests = perRoute.reduce((a, b) => a + b, 0);
      printRow([
        STORE_NAME[mode],
        requests,
        `${perRoute.filter((n) => n > 0).length} of ${ROUTES.length} (at least ${Math.min(...perRoute)} each)`,
        statuses['2xx'] + statuses['3xx'],
        statuses['4xx'],
        statuses['5xx'],
        crashes,
        `${Math.round((performance.now() - started) / 1000)} s`,
      ]);
      assert.equal(requests, RUNS[mode]);
      assert.equal(statuses['5xx'], 0);
      assert.equal(crashes, 0, 'the service answered /healthz after every round');
      assert.ok(Math.min(...perRoute) > 0, 'every route was tried');
      for (const spec of ATTACHMENT_WRITES)
        assert.ok(pastShape[ROUTES.indexOf(spec)]! > 0, `${spec.method} ${spec.path} was answered past its shape checks`);
    });

    test('bodies with __proto__ and constructor keys pollute no prototype of the server process', () => {
      assert.deepEqual(Object.getOwnPropertyNames(Object.prototype).sort(), protoKeys);
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
      assert.equal((Object.prototype as Record<string, unknown>).polluted, undefined);
    });

    test('room names with bidirectional override characters are refused with invalid field name, and change nothing', async () => {
      const marks = ['\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069'];
      for (const m of marks) {
        const before = await state.read();
        const r = await fx.a.post('/api/rooms', { id: id16(), name: `safe${m}txt.exe`, keyId: id16(), keys: [wk(fx.a.nick)] });
        assert.equal(r.status, 400, `U+${m.charCodeAt(0).toString(16)}`);
        assert.deepEqual(r.json, { error: 'invalid', message: r.json.message, field: 'name' });
        await state.assertUnchanged(before, `a room name with U+${m.charCodeAt(0).toString(16)} changed the stored state`);
      }
    });

    test('nicks outside a-z 0-9 _ (homoglyphs, bidi, NUL, upper case) are refused at registration and login', async () => {
      for (const n of ['аlice', 'ALICE', 'al\u202eice', 'al\u0000ice', 'al ice', 'a', 'x'.repeat(33), 'al\ud800ice']) {
        const before = await state.read();
        const reg = await fx.a.post('/api/register', {
          nick: n,
          authKey: b64(32),
          kdf: kdf(),
          publicKey: publicKey(),
          encryptedKey: { iv: iv(), ct: ct(48) },
        });
        assert.equal(reg.json?.error, 'invalid_nick', JSON.stringify(n));
        const login = await fx.a.post('/api/login', { nick: n, authKey: b64(32) });
        assert.deepEqual(login.json, { error: 'invalid', message: login.json.message, field: 'nick' });
        await state.assertUnchanged(before, `the nick ${JSON.stringify(n)} changed the stored state`);
      }
    });

    test('free-form strings with U+0000, other control characters or lone surrogates are refused as shapes or ignored, never a 500', async () => {
      // PostgreSQL cannot store U+0000 in TEXT: each of these was a 500 there before it was checked.
      for (const bad of ['a\u0000b', 'tab\there', '\ud800', 'x\udc00']) {
        const before = await state.read();
        const reg = await fx.a.post('/api/register', {
          nick: nick('inv'),
          authKey: b64(32),
          kdf: kdf(),
          publicKey: publicKey(),
          encryptedKey: { iv: iv(), ct: ct(48) },
          invite: bad,
        });
        assert.deepEqual(reg.json, { error: 'invalid', message: reg.json.message, field: 'invite' }, JSON.stringify(bad));
        const sub = { subscription: { endpoint: `https://push.example.com/${bad}`, keys: { p256dh: publicKey(), auth: b64(16) } } };
        const push = await fx.a.put(`/api/devices/${fx.aDev}/push`, sub, { device: fx.aDev });
        assert.deepEqual(push.json, { error: 'invalid', message: push.json.message, field: 'subscription' }, JSON.stringify(bad));
        await state.assertUnchanged(before, `the string ${JSON.stringify(bad)} changed the stored state`);
        const ack = await fx.a.post('/api/ack', { ids: [bad, ulid()] }, { device: fx.aDev });
        assert.equal(ack.status, 204, 'ids that cannot be queued are ignored');
      }
    });

    test('the request log of this run holds none of the nicks, device ids, room ids, query strings or the client IP used', () => {
      assert.ok(server.logs.length > lastRound, 'the requests were logged');
      assert.deepEqual(leaks(server.logs, used), []);
    });
  });
}
