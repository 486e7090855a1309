/** Room creation: docs/API.md (POST /api/rooms, its checks in order, the Room resource) and its events. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  assertError,
  rooms,
  wk,
  Stream,
  b64,
  ct,
  deviceId,
  id16,
  iv,
  signup,
  startServer,
  userWithDevices,
  type Client,
  type TestServer,
} from '@svc/testkit/harness';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

const body = (c: Client, over: Record<string, unknown> = {}) => ({ id: id16(), name: 'General', keyId: id16(), keys: [wk(c.nick)], ...over });

/** Sends a create that must be refused; the caller's rooms stay the same and the id, when valid, stays free. */
async function refused(c: Client, b: Record<string, unknown>, status: number, error: string, field?: string, device?: string): Promise<void> {
  const before = await rooms(c);
  assertError(await c.post('/api/rooms', b, device !== undefined ? { device } : {}), status, error, field);
  assert.deepEqual(await rooms(c), before);
}
async function idStillFree(c: Client, id: string): Promise<void> {
  assert.equal((await c.post('/api/rooms', body(c, { id }))).status, 201, `room id ${id} was taken by a refused create`);
}

test('POST /api/rooms answers 201 Room {id, name, owner, members, createdAt, keys, needsRekey}', async () => {
  const a = await signup(server);
  const b = body(a, { name: 'Team chat' });
  const t0 = Date.now();
  const r = await a.post('/api/rooms', b);
  assert.equal(r.status, 201, r.text);
  assert.deepEqual(Object.keys(r.json).sort(), ['createdAt', 'id', 'keys', 'members', 'name', 'needsRekey', 'owner']);
  const k = b.keys[0]!;
  assert.deepEqual(
    { ...r.json, createdAt: 0 },
    {
      id: b.id,
      name: 'Team chat',
      owner: a.nick,
      members: [a.nick],
      createdAt: 0,
      keys: [{ keyId: b.keyId, from: a.nick, iv: k.iv, ct: k.ct }],
      needsRekey: false,
    },
  );
  assert.deepEqual(Object.keys(r.json.keys[0]).sort(), ['ct', 'from', 'iv', 'keyId']);
  assert.ok(Number.isInteger(r.json.createdAt) && r.json.createdAt >= t0 - 1000 && r.json.createdAt <= Date.now() + 1000);
  assert.deepEqual(await rooms(a), [r.json]);
});

test("POST /api/rooms: keys holds only the creator's key; a key for a non-member is not kept and makes no member", async () => {
  const a = await signup(server);
  const other = await signup(server);
  const b = body(a, { keys: [wk(other.nick), wk(a.nick)] });
  const r = await a.post('/api/rooms', b);
  assert.equal(r.status, 201, r.text);
  assert.deepEqual(r.json.members, [a.nick]);
  assert.deepEqual(r.json.keys, [{ keyId: b.keyId, from: a.nick, iv: b.keys[1]!.iv, ct: b.keys[1]!.ct }]);
  assert.deepEqual(await rooms(other), []);
});

test('POST /api/rooms with a body that is not JSON answers 400 bad_json (also with a foreign X-Device)', async () => {
  const a = await userWithDevices(server, 1);
  const o = await userWithDevices(server, 1);
  await refused(a.c, '{"id":' as unknown as Record<string, unknown>, 400, 'bad_json');
  await refused(a.c, 'x' as unknown as Record<string, unknown>, 400, 'bad_json', undefined, o.devices[0]);
});

test('POST /api/rooms: an id that is not id16 answers 400 invalid field id', async () => {
  const a = await signup(server);
  const bad: unknown[] = [b64(15), b64(17), b64(12), `${id16()}==`, 'a'.repeat(22).replace(/a$/, '*'), 'x', '', 16, null, [id16()]];
  for (const id of bad) await refused(a, body(a, { id }), 400, 'invalid', 'id');
  const { id: _drop, ...noId } = body(a);
  await refused(a, noId, 400, 'invalid', 'id');
});

test('POST /api/rooms: a name that is empty, over 64 characters, only whitespace, or holds control or bidi override characters answers 400 invalid field name', async () => {
  const a = await signup(server);
  const bad: unknown[] = [
    '',
    'a'.repeat(65),
    'é'.repeat(65),
    ' ',
    '   ',
    '\u00a0\u3000\u2003',
    'a\u0000b',
    'a\u0007b',
    'a\nb',
    'a\rb',
    'a\tb',
    'a\u001fb',
    'a\u007fb',
    'a\u0085b',
    'a\u009fb',
    ...['\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069'].map((ch) => `abc${ch}def`),
    42,
    null,
    ['General'],
  ];
  for (const name of bad) {
    const b = body(a, { name });
    await refused(a, b, 400, 'invalid', 'name');
  }
  const { name: _drop, ...noName } = body(a);
  await refused(a, noName, 400, 'invalid', 'name');
  const last = body(a, { name: 'x\u202ey' });
  await refused(a, last, 400, 'invalid', 'name');
  await idStillFree(a, last.id);
});

test('POST /api/rooms: names of 1 and 64 characters, non-ASCII included, are accepted', async () => {
  const a = await signup(server);
  for (const name of ['x', 'a'.repeat(64), 'é'.repeat(64), '会'.repeat(64), 'Ünïcödé ルーム  with spaces']) {
    const r = await a.post('/api/rooms', body(a, { name }));
    assert.equal(r.status, 201, `${JSON.stringify(name)}: ${r.text}`);
    assert.equal(r.json.name, name);
  }
});

test('POST /api/rooms: a keyId that is not id16 answers 400 invalid field keyId', async () => {
  const a = await signup(server);
  for (const keyId of ['dm', b64(15), b64(17), '', 7, null]) await refused(a, body(a, { keyId }), 400, 'invalid', 'keyId');
  const { keyId: _drop, ...noKeyId } = body(a);
  await refused(a, noKeyId, 400, 'invalid', 'keyId');
  const last = body(a, { keyId: 'dm' });
  await refused(a, last, 400, 'invalid', 'keyId');
  await idStillFree(a, last.id);
});

test('POST /api/rooms: a keys element with a to that is not a nick, an iv not 12 bytes, or a bad ct answers 400 invalid field keys', async () => {
  const a = await signup(server);
  const me = a.nick;
  const bad: unknown[] = [
    [{ ...wk(me), to: me.toUpperCase() }],
    [{ ...wk(me), to: 'a' }],
    [wk(me), { ...wk('bob_x'), to: 'bob-x' }],
    [{ ...wk(me), iv: b64(11) }],
    [{ ...wk(me), iv: b64(13) }],
    [{ ...wk(me), iv: '************....' }],
    [{ ...wk(me), ct: '****' + b64(30) }],
    [{ ...wk(me), ct: b64(15) }],
    [{ ...wk(me), ct: '' }],
    [{ ...wk(me), ct: 'AAAAA' + b64(30) }],
    [{ to: me, iv: iv() }],
    [{ to: me, ct: ct() }],
    [{ iv: iv(), ct: ct() }],
    [wk(me), null],
    [wk(me), 'x'],
    wk(me),
    'keys',
    null,
  ];
  for (const keys of bad) await refused(a, body(a, { keys }), 400, 'invalid', 'keys');
  const { keys: _drop, ...noKeys } = body(a);
  await refused(a, noKeys, 400, 'invalid', 'keys');
  const last = body(a, { keys: [{ ...wk(me), ct: b64(15) }] });
  await refused(a, last, 400, 'invalid', 'keys');
  await idStillFree(a, last.id);
});

test('POST /api/rooms: a ct of exactly 16 bytes is accepted', async () => {
  const a = await signup(server);
  assert.equal((await a.post('/api/rooms', body(a, { keys: [{ ...wk(a.nick), ct: b64(16) }] }))).status, 201);
});

test('POST /api/rooms: two keys for one nick, or not exactly one key for the creator, answers 400 keys_mismatch', async () => {
  const a = await signup(server);
  const other = await signup(server);
  const bad = [[], [wk(other.nick)], [wk(a.nick), wk(a.nick)], [wk(a.nick), wk(other.nick), wk(other.nick)]];
  for (const keys of bad) await refused(a, body(a, { keys }), 400, 'keys_mismatch');
  const last = body(a, { keys: [wk(a.nick), wk(a.nick)] });
  await refused(a, last, 400, 'keys_mismatch');
  await idStillFree(a, last.id);
});

test('POST /api/rooms: an X-Device that is not an own device answers 403 unknown_device; an own one is accepted', async () => {
  const a = await userWithDevices(server, 1);
  const o = await userWithDevices(server, 1);
  const b1 = body(a.c);
  await refused(a.c, b1, 403, 'unknown_device', undefined, o.devices[0]);
  await refused(a.c, b1, 403, 'unknown_device', undefined, deviceId());
  await idStillFree(a.c, b1.id);
  const r = await a.c.post('/api/rooms', body(a.c), { device: a.devices[0]! });
  assert.equal(r.status, 201, r.text);
});

test('POST /api/rooms with an id already used answers 409 room_conflict; the room is neither joined nor overwritten', async () => {
  const a = await signup(server);
  const b = await signup(server);
  const first = await a.post('/api/rooms', body(a, { name: 'Original' }));
  assert.equal(first.status, 201);
  const id = first.json.id as string;
  await refused(b, body(b, { id, name: 'Hijack' }), 409, 'room_conflict');
  await refused(a, body(a, { id, name: 'Again' }), 409, 'room_conflict');
  assert.deepEqual(await rooms(a), [first.json]);
  assert.deepEqual(await rooms(b), []);
});

test('POST /api/rooms precedence: id before name before keyId before keys', async () => {
  const a = await signup(server);
  await refused(a, body(a, { id: 'x', name: '' }), 400, 'invalid', 'id');
  await refused(a, body(a, { id: 'x', name: '', keyId: 'x', keys: 'x' }), 400, 'invalid', 'id');
  await refused(a, body(a, { name: '', keyId: 'x' }), 400, 'invalid', 'name');
  await refused(a, body(a, { name: 'a\u202eb', keys: null }), 400, 'invalid', 'name');
  await refused(a, body(a, { keyId: 'x', keys: [{ to: 'X' }] }), 400, 'invalid', 'keyId');
});

test('POST /api/rooms precedence: keys shape before keys_mismatch, keys_mismatch before X-Device, X-Device before room_conflict', async () => {
  const a = await userWithDevices(server, 1);
  const o = await userWithDevices(server, 1);
  const foreign = o.devices[0]!;
  // a bad element and no key for the creator
  await refused(a.c, body(a.c, { keys: [{ ...wk(o.c.nick), iv: b64(11) }] }), 400, 'invalid', 'keys');
  // shape errors come before the device check
  await refused(a.c, body(a.c, { id: 'x' }), 400, 'invalid', 'id', foreign);
  await refused(a.c, body(a.c, { name: '' }), 400, 'invalid', 'name', foreign);
  await refused(a.c, body(a.c, { keys: [{ ...wk(a.c.nick), ct: 'x' }] }), 400, 'invalid', 'keys', foreign);
  await refused(a.c, body(a.c, { keys: [] }), 400, 'keys_mismatch', undefined, foreign);
  // an existing id: shape, keys_mismatch and device come first
  const taken = await o.c.post('/api/rooms', body(o.c));
  assert.equal(taken.status, 201);
  const id = taken.json.id as string;
  await refused(a.c, body(a.c, { id, name: '' }), 400, 'invalid', 'name');
  await refused(a.c, body(a.c, { id, keys: [wk(o.c.nick)] }), 400, 'keys_mismatch');
  await refused(a.c, body(a.c, { id }), 403, 'unknown_device', undefined, foreign);
  await refused(a.c, body(a.c, { id }), 409, 'room_conflict', undefined, a.devices[0]);
  assert.deepEqual(await rooms(o.c), [taken.json]);
});

test("POST /api/rooms: the creator's other devices get a `room` event; the calling device (X-Device) gets none", async () => {
  const a = await userWithDevices(server, 3);
  const o = await userWithDevices(server, 1);
  const [d1, d2, d3] = a.devices as [string, string, string];
  const streams = await Promise.all([Stream.open(a.c, d1), Stream.open(a.c, d2), Stream.open(a.c, d3), Stream.open(o.c, o.devices[0]!)]);
  for (const s of streams) assert.ok(await s.ready());
  const r = await a.c.post('/api/rooms', body(a.c), { device: d1 });
  assert.equal(r.status, 201, r.text);
  for (const s of [streams[1], streams[2]]) {
    assert.ok(await s.until((ev) => ev.some((e) => e.event === 'room')));
    const ev = s.named('room');
    assert.equal(ev.length, 1);
    assert.deepEqual(ev[0]!.json, r.json);
  }
  await Stream.settle();
  assert.equal(streams[0].events.filter((e) => e.event !== 'ready').length, 0);
  assert.equal(streams[3].events.filter((e) => e.event !== 'ready').length, 0);
  for (const s of streams) s.close();
});

test('POST /api/rooms without X-Device: every device of the creator gets the `room` event', async () => {
  const a = await userWithDevices(server, 2);
  const streams = await Promise.all(a.devices.map((d) => Stream.open(a.c, d)));
  for (const s of streams) assert.ok(await s.ready());
  const r = await a.c.post('/api/rooms', body(a.c));
  assert.equal(r.status, 201);
  for (const s of streams) {
    assert.ok(await s.until((ev) => ev.some((e) => e.event === 'room')));
    assert.deepEqual(s.named('room')[0]!.json, r.json);
  }
  for (const s of streams) s.close();
});

test('POST /api/rooms: a refused create sends no event', async () => {
  const a = await userWithDevices(server, 2);
  const s = await Stream.open(a.c, a.devices[1]!);
  assert.ok(await s.ready());
  const taken = await a.c.post('/api/rooms', body(a.c), { device: a.devices[0]! });
  assert.ok(await s.until((ev) => ev.some((e) => e.event === 'room')));
  assertError(await a.c.post('/api/rooms', body(a.c, { id: taken.json.id }), { device: a.devices[0]! }), 409, 'room_conflict');
  assertError(await a.c.post('/api/rooms', body(a.c, { keys: [] }), { device: a.devices[0]! }), 400, 'keys_mismatch');
  await Stream.settle();
  assert.equal(s.named('room').length, 1);
  s.close();
});
