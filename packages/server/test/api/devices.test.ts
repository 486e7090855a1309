/** Devices: docs/API.md, the checks of PUT and DELETE …/push included. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createECDH, randomBytes } from 'node:crypto';
import {
  assertError,
  Stream,
  addDevice,
  b64,
  deviceId,
  dmBody,
  signup,
  startServer,
  userWithDevices,
  type Client,
  type TestServer,
} from '@svc/testkit/harness';
import { NON_PUBLIC_LITERAL_HOSTS } from '../push/non-public-hosts.js';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

const devices = async (c: Client) => {
  const r = await c.get('/api/devices');
  assert.equal(r.status, 200, r.text);
  return r.json as { id: string; createdAt: number; lastSeenAt: number | null; push: boolean; online: boolean }[];
};
const ids = async (c: Client) => (await devices(c)).map((d) => d.id);
const pushOf = async (c: Client, id: string) => (await devices(c)).find((d) => d.id === id)?.push;

function p256Point(): Buffer {
  const e = createECDH('prime256v1');
  e.generateKeys();
  return e.getPublicKey();
}
const url64 = (b: Buffer) => b.toString('base64url');
const padded64 = (b: Buffer) => b.toString('base64').replace(/\+/g, '-').replace(/\//g, '_');

function sub(over: { endpoint?: unknown; p256dh?: unknown; auth?: unknown } = {}) {
  return {
    subscription: {
      endpoint: 'endpoint' in over ? over.endpoint : `https://push.example.com/wpush/v2/${b64(24)}`,
      keys: {
        p256dh: 'p256dh' in over ? over.p256dh : url64(p256Point()),
        auth: 'auth' in over ? over.auth : b64(16),
      },
    },
  };
}

const ms = (n: number) => new Promise((r) => setTimeout(r, n));

// ---- POST /api/devices ----

test('POST /api/devices with a new id answers 201 {id, createdAt}', async () => {
  const c = await signup(server);
  const id = deviceId();
  const t0 = Date.now();
  const r = await c.post('/api/devices', { id });
  assert.equal(r.status, 201, r.text);
  assert.deepEqual(Object.keys(r.json).sort(), ['createdAt', 'id']);
  assert.equal(r.json.id, id);
  assert.ok(Number.isInteger(r.json.createdAt) && r.json.createdAt >= t0 - 1000 && r.json.createdAt <= Date.now() + 1000);
  assert.deepEqual(await ids(c), [id]);
});

test('POST /api/devices with an id the caller already holds answers 200 with the same {id, createdAt}', async () => {
  const c = await signup(server);
  const id = deviceId();
  const first = await c.post('/api/devices', { id });
  assert.equal(first.status, 201);
  const again = await c.post('/api/devices', { id });
  assert.equal(again.status, 200, again.text);
  assert.deepEqual(again.json, first.json);
  assert.deepEqual(await ids(c), [id]);
});

test('POST /api/devices with an id held by another account answers 409 device_conflict and changes nothing', async () => {
  const owner = await signup(server);
  const other = await signup(server);
  const id = await addDevice(owner);
  assertError(await other.post('/api/devices', { id }), 409, 'device_conflict');
  assert.deepEqual(await ids(other), []);
  assert.deepEqual(await ids(owner), [id]);
});

test('POST /api/devices: an id that is not 8 to 64 of A-Z a-z 0-9 _ - answers 400 invalid field id and adds nothing', async () => {
  const c = await signup(server);
  const bad: unknown[] = [
    'a'.repeat(7),
    'a'.repeat(65),
    '',
    'abcdefg.',
    'abcd efgh',
    'abcd+efg',
    'abcd/efg',
    'abcd=efg',
    'abcdéfgh',
    'abcdefgh\n',
    12345678,
    null,
    ['abcdefgh'],
  ];
  for (const id of bad) assertError(await c.post('/api/devices', { id }), 400, 'invalid', 'id');
  assertError(await c.post('/api/devices', {}), 400, 'invalid', 'id');
  assert.deepEqual(await ids(c), []);
});

test('POST /api/devices accepts ids of 8 and 64 characters using every allowed character class', async () => {
  const c = await signup(server);
  const good = [`${b64(3)}Aa0_-9`.slice(0, 8), `AZaz09_-${b64(42)}`.slice(0, 64)];
  assert.equal(good[0]!.length, 8);
  assert.equal(good[1]!.length, 64);
  for (const id of good) assert.equal((await c.post('/api/devices', { id })).status, 201, id);
  assert.deepEqual((await ids(c)).sort(), [...good].sort());
});

test('POST /api/devices with a body that is not JSON answers 400 bad_json', async () => {
  const c = await signup(server);
  assertError(await c.post('/api/devices', '{"id":'), 400, 'bad_json');
  assert.deepEqual(await ids(c), []);
});

test('POST /api/devices past 32 devices answers 409 limit_reached; an own id still answers 200', async () => {
  const c = await signup(server);
  const mine: string[] = [];
  for (let i = 0; i < 32; i++) mine.push(await addDevice(c));
  assertError(await c.post('/api/devices', { id: deviceId() }), 409, 'limit_reached');
  assert.deepEqual((await ids(c)).sort(), [...mine].sort());
  assert.equal((await c.post('/api/devices', { id: mine[5] })).status, 200);
  assert.equal((await c.del(`/api/devices/${mine[0]}`)).status, 204);
  assert.equal((await c.post('/api/devices', { id: deviceId() })).status, 201);
  assert.equal((await ids(c)).length, 32);
});

// ---- GET /api/devices ----

test('GET /api/devices lists [{id, createdAt, lastSeenAt, push, online}] oldest first', async () => {
  const c = await signup(server);
  assert.deepEqual(await devices(c), []);
  const made: { id: string; createdAt: number }[] = [];
  for (let i = 0; i < 3; i++) {
    const id = deviceId();
    made.push((await c.post('/api/devices', { id })).json);
    await ms(3);
  }
  const list = await devices(c);
  assert.deepEqual(
    list.map((d) => d.id),
    made.map((d) => d.id),
  );
  for (const [i, d] of list.entries()) {
    assert.deepEqual(Object.keys(d).sort(), ['createdAt', 'id', 'lastSeenAt', 'online', 'push']);
    assert.equal(d.createdAt, made[i]!.createdAt);
    assert.ok(d.lastSeenAt === null || Number.isInteger(d.lastSeenAt));
    assert.equal(d.push, false);
    assert.equal(d.online, false);
  }
  // another account's devices are not listed
  const other = await userWithDevices(server, 2);
  assert.deepEqual(
    await ids(c),
    made.map((d) => d.id),
  );
  assert.equal((await ids(other.c)).length, 2);
});

test('GET /api/devices shows online true while the device has an open stream, false after it closes', async () => {
  const {
    c,
    devices: [d1, d2],
  } = await userWithDevices(server, 2);
  const s = await Stream.open(c, d1!);
  assert.ok(await s.ready());
  let list = await devices(c);
  assert.equal(list.find((d) => d.id === d1)!.online, true);
  assert.equal(list.find((d) => d.id === d2)!.online, false);
  s.close();
  const deadline = Date.now() + 3000;
  do {
    await ms(20);
    list = await devices(c);
  } while (list.find((d) => d.id === d1)!.online && Date.now() < deadline);
  assert.equal(list.find((d) => d.id === d1)!.online, false);
});

test('GET /api/devices shows push true after a subscription is set and false after it is deleted', async () => {
  const {
    c,
    devices: [d1, d2],
  } = await userWithDevices(server, 2);
  assert.equal((await c.put(`/api/devices/${d1}/push`, sub(), { device: d1 })).status, 204);
  assert.equal(await pushOf(c, d1!), true);
  assert.equal(await pushOf(c, d2!), false);
  assert.equal((await c.del(`/api/devices/${d1}/push`, undefined, { device: d1 })).status, 204);
  assert.equal(await pushOf(c, d1!), false);
});

// ---- DELETE /api/devices/{id} ----

test('DELETE /api/devices/{id} of an own device answers 204 and removes it from the list', async () => {
  const {
    c,
    devices: [d1, d2],
  } = await userWithDevices(server, 2);
  const r = await c.del(`/api/devices/${d1}`);
  assert.equal(r.status, 204);
  assert.equal(r.text, '');
  assert.deepEqual(await ids(c), [d2]);
});

test('DELETE /api/devices/{id} of a foreign or unknown device answers 403 unknown_device and deletes nothing', async () => {
  const me = await userWithDevices(server, 1);
  const other = await userWithDevices(server, 1);
  assertError(await me.c.del(`/api/devices/${other.devices[0]}`), 403, 'unknown_device');
  assertError(await me.c.del(`/api/devices/${deviceId()}`), 403, 'unknown_device');
  assert.deepEqual(await ids(other.c), other.devices);
  assert.deepEqual(await ids(me.c), me.devices);
});

test('DELETE /api/devices/{id}: its queue and subscription go, so re-adding the id starts empty', async () => {
  const alice = await userWithDevices(server, 1);
  const bob = await userWithDevices(server, 2);
  const [b1, b2] = bob.devices as [string, string];
  assert.equal((await bob.c.put(`/api/devices/${b1}/push`, sub(), { device: b1 })).status, 204);
  const sent = await alice.c.post('/api/messages', dmBody(bob.c.nick), { device: alice.devices[0] });
  assert.equal(sent.status, 202, sent.text);

  assert.equal((await bob.c.del(`/api/devices/${b1}`)).status, 204);
  assert.equal((await bob.c.post('/api/devices', { id: b1 })).status, 201);
  assert.equal(await pushOf(bob.c, b1), false);

  const s1 = await Stream.open(bob.c, b1);
  assert.ok(await s1.ready());
  assert.equal(s1.named('msg').length, 0);
  s1.close();
  // the other device's queue is untouched
  const s2 = await Stream.open(bob.c, b2);
  assert.ok(await s2.ready());
  assert.deepEqual(
    s2.named('msg').map((e) => e.json.id),
    [sent.json.id],
  );
  s2.close();
});

test('DELETE /api/devices/{id} closes the open stream of that device', async () => {
  const {
    c,
    devices: [d1, d2],
  } = await userWithDevices(server, 2);
  const s1 = await Stream.open(c, d1!);
  const s2 = await Stream.open(c, d2!);
  assert.ok(await s1.ready());
  assert.ok(await s2.ready());
  assert.equal((await c.del(`/api/devices/${d1}`)).status, 204);
  assert.equal(await s1.closedByServer(), true);
  await Stream.settle();
  assert.equal(s2.ended, false);
  s2.close();
});

test('DELETE /api/devices/{id}: a device may delete itself (X-Device names the deleted device)', async () => {
  const {
    c,
    devices: [d1, d2],
  } = await userWithDevices(server, 2);
  assert.equal((await c.del(`/api/devices/${d1}`, undefined, { device: d1 })).status, 204);
  assert.deepEqual(await ids(c), [d2]);
});

// ---- PUT /api/devices/{id}/push ----

test('PUT push with a valid subscription on an own device answers 204', async () => {
  const {
    c,
    devices: [d1],
  } = await userWithDevices(server, 1);
  const r = await c.put(`/api/devices/${d1}/push`, sub(), { device: d1 });
  assert.equal(r.status, 204, r.text);
  assert.equal(r.text, '');
  assert.equal(await pushOf(c, d1!), true);
});

test('PUT push may set the subscription of another own device than X-Device', async () => {
  const {
    c,
    devices: [d1, d2],
  } = await userWithDevices(server, 2);
  assert.equal((await c.put(`/api/devices/${d2}/push`, sub(), { device: d1 })).status, 204);
  assert.equal(await pushOf(c, d2!), true);
  assert.equal(await pushOf(c, d1!), false);
});

test('PUT push rule 1: a body that is not JSON answers 400 bad_json, before the device checks', async () => {
  const me = await userWithDevices(server, 1);
  const other = await userWithDevices(server, 1);
  const d = me.devices[0]!;
  assertError(await me.c.put(`/api/devices/${d}/push`, 'not json', { device: d }), 400, 'bad_json');
  assertError(await me.c.put(`/api/devices/${d}/push`, '{"subscription":', {}), 400, 'bad_json');
  assertError(await me.c.put(`/api/devices/${other.devices[0]}/push`, 'nope', { device: other.devices[0]! }), 400, 'bad_json');
  assert.equal(await pushOf(me.c, d), false);
});

test('PUT push rule 2: endpoint not https, without a host, or not absolute answers 400 invalid field subscription', async () => {
  const {
    c,
    devices: [d],
  } = await userWithDevices(server, 1);
  const endpoints: unknown[] = [
    'http://push.example.com/x',
    'ftp://push.example.com/x',
    'wss://push.example.com/x',
    'https://',
    'https:',
    '/wpush/v2/abc',
    'push.example.com/x',
    '',
    42,
    null,
    undefined,
  ];
  for (const endpoint of endpoints)
    assertError(await c.put(`/api/devices/${d}/push`, sub({ endpoint }), { device: d }), 400, 'invalid', 'subscription');
  assert.equal(await pushOf(c, d!), false);
});

test('PUT push rule 2: an endpoint over 2048 characters is invalid; exactly 2048 is accepted', async () => {
  const {
    c,
    devices: [d],
  } = await userWithDevices(server, 1);
  const base = 'https://push.example.com/';
  const long = base + 'a'.repeat(2049 - base.length);
  assert.equal(long.length, 2049);
  assertError(await c.put(`/api/devices/${d}/push`, sub({ endpoint: long }), { device: d }), 400, 'invalid', 'subscription');
  assert.equal(await pushOf(c, d!), false);
  const max = base + 'a'.repeat(2048 - base.length);
  assert.equal(max.length, 2048);
  assert.equal((await c.put(`/api/devices/${d}/push`, sub({ endpoint: max }), { device: d })).status, 204);
});

test('PUT push rule 2: an endpoint whose host is a literal non-public IP, in any spelling, is invalid', async () => {
  const {
    c,
    devices: [d],
  } = await userWithDevices(server, 1);
  for (const h of NON_PUBLIC_LITERAL_HOSTS) {
    assertError(await c.put(`/api/devices/${d}/push`, sub({ endpoint: `https://${h}/push/x` }), { device: d }), 400, 'invalid', 'subscription');
    assertError(await c.put(`/api/devices/${d}/push`, sub({ endpoint: `https://${h}:8443/push/x` }), { device: d }), 400, 'invalid', 'subscription');
  }
  assert.equal(await pushOf(c, d!), false);
});

test('PUT push rule 2: a public literal IP or a host name (not resolved) is accepted', async () => {
  const {
    c,
    devices: [d],
  } = await userWithDevices(server, 1);
  for (const endpoint of ['https://93.184.216.34/push/x', 'https://[2606:4700::1111]/push/x', 'https://fcm.googleapis.com/fcm/send/abc']) {
    assert.equal((await c.put(`/api/devices/${d}/push`, sub({ endpoint }), { device: d })).status, 204, endpoint);
  }
});

test('PUT push rule 2: p256dh not 65 bytes or not an uncompressed P-256 point answers 400 invalid field subscription', async () => {
  const {
    c,
    devices: [d],
  } = await userWithDevices(server, 1);
  const real = p256Point();
  const offCurve = Buffer.from(real);
  offCurve[64] = (offCurve[64]! + 1) & 0xff;
  const wrongPrefix = Buffer.from(real);
  wrongPrefix[0] = 0x05;
  const compressed = Buffer.concat([Buffer.from([2 + (real[64]! & 1)]), real.subarray(1, 33)]);
  const bad: unknown[] = [
    url64(real.subarray(0, 64)),
    url64(Buffer.concat([real, Buffer.from([0])])),
    url64(Buffer.concat([Buffer.from([4]), Buffer.alloc(64)])),
    url64(offCurve),
    url64(wrongPrefix),
    url64(compressed),
    url64(randomBytes(65)).replace(/^./, '*'),
    '',
    65,
    null,
    undefined,
  ];
  for (const p256dh of bad) assertError(await c.put(`/api/devices/${d}/push`, sub({ p256dh }), { device: d }), 400, 'invalid', 'subscription');
  assert.equal(await pushOf(c, d!), false);
});

test('PUT push rule 2: auth not 16 bytes answers 400 invalid field subscription', async () => {
  const {
    c,
    devices: [d],
  } = await userWithDevices(server, 1);
  for (const auth of [b64(15), b64(17), b64(32), '', '!!!!!!!!!!!!!!!!!!!!!!', 16, null, undefined]) {
    assertError(await c.put(`/api/devices/${d}/push`, sub({ auth }), { device: d }), 400, 'invalid', 'subscription');
  }
  assert.equal(await pushOf(c, d!), false);
});

test('PUT push rule 2: a missing or non-object subscription or keys answers 400 invalid field subscription', async () => {
  const {
    c,
    devices: [d],
  } = await userWithDevices(server, 1);
  const bodies: unknown[] = [
    {},
    { subscription: null },
    { subscription: 'https://push.example.com/x' },
    { subscription: [] },
    { subscription: { endpoint: 'https://push.example.com/x' } },
    { subscription: { endpoint: 'https://push.example.com/x', keys: null } },
    [],
  ];
  for (const body of bodies) assertError(await c.put(`/api/devices/${d}/push`, body, { device: d }), 400, 'invalid', 'subscription');
  assert.equal(await pushOf(c, d!), false);
});

test('PUT push rule 2: padded base64url for p256dh and auth is accepted', async () => {
  const {
    c,
    devices: [d],
  } = await userWithDevices(server, 1);
  const p256dh = padded64(p256Point());
  const auth = padded64(randomBytes(16));
  assert.ok(p256dh.endsWith('=') && auth.endsWith('=='));
  const r = await c.put(`/api/devices/${d}/push`, sub({ p256dh, auth }), { device: d });
  assert.equal(r.status, 204, r.text);
  assert.equal(await pushOf(c, d!), true);
});

test('PUT push rule 2: extra fields such as expirationTime are accepted and dropped: only endpoint, p256dh and auth are stored', async () => {
  const {
    c,
    devices: [d],
  } = await userWithDevices(server, 1);
  const body = sub();
  const marker = `extra-${randomBytes(6).toString('hex')}`;
  const withExtra = {
    ...body,
    subscription: { ...body.subscription, expirationTime: 1234567890123, keys: { ...body.subscription.keys, extra: marker }, other: marker },
    other: marker,
  };
  assert.equal((await c.put(`/api/devices/${d}/push`, withExtra, { device: d })).status, 204);
  const [row] = await server.query(`SELECT * FROM devices WHERE id = '${d}'`);
  assert.equal(row!.push_endpoint, body.subscription.endpoint);
  assert.equal(row!.push_p256dh, body.subscription.keys.p256dh);
  assert.equal(row!.push_auth, body.subscription.keys.auth);
  const kept = JSON.stringify(row);
  assert.ok(!kept.includes(marker) && !kept.includes('1234567890123'), `nothing else of the subscription is stored: ${kept}`);
  const withTime = { subscription: { ...sub().subscription, expirationTime: Date.now() + 86400000 } };
  assert.equal((await c.put(`/api/devices/${d}/push`, withTime, { device: d })).status, 204);
  assert.equal(await pushOf(c, d!), true);
});

test('PUT push rule 3: X-Device missing, unknown or foreign answers 403 unknown_device and sets nothing', async () => {
  const me = await userWithDevices(server, 1);
  const other = await userWithDevices(server, 1);
  const d = me.devices[0]!;
  assertError(await me.c.put(`/api/devices/${d}/push`, sub()), 403, 'unknown_device');
  assertError(await me.c.put(`/api/devices/${d}/push`, sub(), { device: deviceId() }), 403, 'unknown_device');
  assertError(await me.c.put(`/api/devices/${d}/push`, sub(), { device: other.devices[0]! }), 403, 'unknown_device');
  assert.equal(await pushOf(me.c, d), false);
});

test('PUT push rule 4: a path device that is unknown or foreign answers 403 unknown_device and sets nothing', async () => {
  const me = await userWithDevices(server, 1);
  const other = await userWithDevices(server, 1);
  const d = me.devices[0]!;
  assertError(await me.c.put(`/api/devices/${other.devices[0]}/push`, sub(), { device: d }), 403, 'unknown_device');
  assertError(await me.c.put(`/api/devices/${deviceId()}/push`, sub(), { device: d }), 403, 'unknown_device');
  assert.equal(await pushOf(other.c, other.devices[0]!), false);
  assert.equal(await pushOf(me.c, d), false);
});

test('PUT push: shape errors come before device errors (invalid subscription with missing or foreign devices)', async () => {
  const me = await userWithDevices(server, 1);
  const other = await userWithDevices(server, 1);
  const d = me.devices[0]!;
  const o = other.devices[0]!;
  const bad = sub({ endpoint: 'http://push.example.com/x' });
  assertError(await me.c.put(`/api/devices/${d}/push`, bad), 400, 'invalid', 'subscription');
  assertError(await me.c.put(`/api/devices/${d}/push`, bad, { device: o }), 400, 'invalid', 'subscription');
  assertError(await me.c.put(`/api/devices/${o}/push`, bad, { device: d }), 400, 'invalid', 'subscription');
  assertError(await me.c.put(`/api/devices/${o}/push`, sub({ auth: b64(15) }), { device: o }), 400, 'invalid', 'subscription');
  assertError(await me.c.put(`/api/devices/${o}/push`, 'x', {}), 400, 'bad_json');
  assert.equal(await pushOf(me.c, d), false);
  assert.equal(await pushOf(other.c, o), false);
});

test('PUT push: an invalid subscription leaves an existing subscription in place', async () => {
  const {
    c,
    devices: [d],
  } = await userWithDevices(server, 1);
  assert.equal((await c.put(`/api/devices/${d}/push`, sub(), { device: d })).status, 204);
  assertError(await c.put(`/api/devices/${d}/push`, sub({ endpoint: 'https://127.0.0.1/x' }), { device: d }), 400, 'invalid', 'subscription');
  assert.equal(await pushOf(c, d!), true);
});

// ---- DELETE /api/devices/{id}/push ----

test('DELETE push answers 204 and removes the subscription; 204 also when there was none', async () => {
  const {
    c,
    devices: [d1, d2],
  } = await userWithDevices(server, 2);
  assert.equal((await c.put(`/api/devices/${d1}/push`, sub(), { device: d1 })).status, 204);
  const r = await c.del(`/api/devices/${d1}/push`, undefined, { device: d1 });
  assert.equal(r.status, 204);
  assert.equal(r.text, '');
  assert.equal(await pushOf(c, d1!), false);
  assert.equal((await c.del(`/api/devices/${d1}/push`, undefined, { device: d1 })).status, 204);
  assert.equal((await c.del(`/api/devices/${d2}/push`, undefined, { device: d1 })).status, 204);
});

test('DELETE push: X-Device missing, unknown or foreign answers 403 unknown_device and keeps the subscription', async () => {
  const me = await userWithDevices(server, 1);
  const other = await userWithDevices(server, 1);
  const d = me.devices[0]!;
  assert.equal((await me.c.put(`/api/devices/${d}/push`, sub(), { device: d })).status, 204);
  assertError(await me.c.del(`/api/devices/${d}/push`), 403, 'unknown_device');
  assertError(await me.c.del(`/api/devices/${d}/push`, undefined, { device: deviceId() }), 403, 'unknown_device');
  assertError(await me.c.del(`/api/devices/${d}/push`, undefined, { device: other.devices[0]! }), 403, 'unknown_device');
  assert.equal(await pushOf(me.c, d), true);
});

test('DELETE push: a path device that is unknown or foreign answers 403 unknown_device and keeps its subscription', async () => {
  const me = await userWithDevices(server, 1);
  const other = await userWithDevices(server, 1);
  const o = other.devices[0]!;
  assert.equal((await other.c.put(`/api/devices/${o}/push`, sub(), { device: o })).status, 204);
  assertError(await me.c.del(`/api/devices/${o}/push`, undefined, { device: me.devices[0]! }), 403, 'unknown_device');
  assertError(await me.c.del(`/api/devices/${deviceId()}/push`, undefined, { device: me.devices[0]! }), 403, 'unknown_device');
  assert.equal(await pushOf(other.c, o), true);
});
