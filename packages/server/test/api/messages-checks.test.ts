/**
 * POST /api/messages (docs/API.md): its checks in their order, each refusal shown to queue
 * nothing, plus precedence tests that break two rules at once. The test names number the checks
 * in groups: 1 body size and parse, 2 shape, 3 clock window, 4 X-Device, 5 target rights, in the
 * order docs/API.md gives them. Group 6, the rate limit, is in
 * messages-limit.test.ts; group 7, the delivery, in messages-delivery.test.ts.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import {
  ORIGIN,
  addDevice,
  b64,
  ct,
  dmBody,
  id16,
  iv,
  nick,
  startServer,
  ulid,
  userWithDevices,
  type Client,
  type TestServer,
} from '@svc/testkit/harness';
import { assertError, assertQueueEmpty, changeMembers, createRoom, replay, roomBody, send } from './messaging-helpers.js';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

/** A fresh sender and recipient, one device each. */
async function pair(): Promise<{ alice: Client; a1: string; bob: Client; b1: string }> {
  const a = await userWithDevices(server, 1);
  const b = await userWithDevices(server, 1);
  return { alice: a.c, a1: a.devices[0]!, bob: b.c, b1: b.devices[0]! };
}

/** Sends each body and expects 400 invalid with `field`; then the recipient's queue is still empty. */
async function expectInvalid(bodies: unknown[], field: string): Promise<void> {
  const { alice, a1, bob, b1 } = await pair();
  for (const body of bodies) {
    const full = typeof body === 'function' ? (body as (n: string) => unknown)(bob.nick) : body;
    assertError(await send(alice, full, a1), 400, 'invalid', field);
  }
  await assertQueueEmpty(bob, b1);
}

describe('check 1: body parse', () => {
  test('check 1: a body that is not JSON answers 400 bad_json and queues nothing', async () => {
    const { alice, a1, bob, b1 } = await pair();
    assertError(await send(alice, '{"id": not json', a1), 400, 'bad_json');
    assertError(await send(alice, JSON.stringify(dmBody(bob.nick)).slice(0, -1), a1), 400, 'bad_json');
    // docs/API.md: a Content-Type other than application/json, and an empty body, are bad_json too
    assertError(await alice.post('/api/messages', undefined, { device: a1, headers: { 'content-type': 'application/json' } }), 400, 'bad_json');
    const asText = await alice.req('POST', '/api/messages', {
      body: JSON.stringify(dmBody(bob.nick)),
      device: a1,
      headers: { 'content-type': 'text/plain' },
    });
    assertError(asText, 400, 'bad_json');
    await assertQueueEmpty(bob, b1);
  });

  test('check 1: a body over 32 KiB answers 413 too_large (declared length) and queues nothing', async () => {
    const { alice, a1, bob, b1 } = await pair();
    const big = { ...dmBody(bob.nick), ct: 'A'.repeat(33_000) };
    assertError(await send(alice, big, a1), 413, 'too_large');
    await assertQueueEmpty(bob, b1);
  });

  test('check 1: a body over 32 KiB answers 413 too_large also while reading (no declared length)', async () => {
    const { alice, a1, bob, b1 } = await pair();
    const text = JSON.stringify({ ...dmBody(bob.nick), ct: 'A'.repeat(40_000) });
    const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        `${server.url}/api/messages`,
        {
          method: 'POST',
          headers: { origin: ORIGIN, cookie: alice.cookie!, 'x-device': a1, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
        },
        (r) => {
          let body = '';
          r.on('data', (d: Buffer) => (body += d.toString()));
          r.on('end', () => resolve({ status: r.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      for (let i = 0; i < text.length; i += 4096) req.write(text.slice(i, i + 4096));
      req.end();
    });
    assert.equal(res.status, 413, res.body);
    assert.equal(JSON.parse(res.body).error, 'too_large');
    await assertQueueEmpty(bob, b1);
  });

  test('check 1: a body of exactly 32768 bytes is not too large', async () => {
    const { alice, a1, bob, b1 } = await pair();
    const base = JSON.stringify({ ...dmBody(bob.nick), ct: '' });
    let k = 32768 - base.length;
    let pad = 0;
    while (k % 4 !== 0) {
      k--;
      pad++;
    }
    const text = JSON.stringify({ ...dmBody(bob.nick), ct: 'A'.repeat(k) }) + ' '.repeat(pad);
    assert.equal(Buffer.byteLength(text), 32768);
    const r = await send(alice, text, a1);
    assert.equal(r.status, 202, r.text);
    const q = await replay(bob, b1);
    assert.deepEqual(q.msgIds, [r.json.id]);
  });
});

describe('check 2: shape', () => {
  test('check 2: id not a 26-character ULID answers invalid field id', async () => {
    const good = ulid();
    await expectInvalid(
      [
        (n: string) => ({ ...dmBody(n), id: good.slice(0, 25) }),
        (n: string) => ({ ...dmBody(n), id: good + '0' }),
        (n: string) => ({ ...dmBody(n), id: good.slice(0, 25) + 'U' }), // U is not Crockford base32
        (n: string) => ({ ...dmBody(n), id: good.slice(0, 25) + '-' }),
        (n: string) => ({ ...dmBody(n), id: '8' + good.slice(1) }), // beyond the largest ULID
        (n: string) => ({ ...dmBody(n), id: 12345 }),
        (n: string) => ({ ...dmBody(n), id: '' }),
        (n: string) => {
          const { id: _id, ...rest } = dmBody(n);
          return rest;
        },
      ],
      'id',
    );
  });

  test('check 2: to not exactly one of dm and room (both, neither, extra key, not an object) answers invalid field to', async () => {
    await expectInvalid(
      [
        (n: string) => ({ ...dmBody(n), to: { dm: n, room: id16() } }),
        (n: string) => ({ ...dmBody(n), to: {} }),
        (n: string) => ({ ...dmBody(n), to: { dm: n, extra: 1 } }),
        (n: string) => ({ ...dmBody(n), keyId: id16(), to: { room: id16(), extra: 1 } }),
        (n: string) => ({ ...dmBody(n), to: n }),
        (n: string) => ({ ...dmBody(n), to: [{ dm: n }] }),
        (n: string) => ({ ...dmBody(n), to: null }),
        (n: string) => {
          const { to: _to, ...rest } = dmBody(n);
          return rest;
        },
      ],
      'to',
    );
  });

  test('check 2: dm with an invalid nick answers invalid field to', async () => {
    await expectInvalid(
      ['Bob_1', 'b', 'x'.repeat(33), 'bad-nick', 'a b', '', 42, null].map((dm) => (n: string) => ({ ...dmBody(n), to: { dm } })),
      'to',
    );
  });

  test('check 2: dm with keyId other than "dm" answers invalid field keyId', async () => {
    await expectInvalid(
      [
        (n: string) => ({ ...dmBody(n), keyId: 'DM' }),
        (n: string) => ({ ...dmBody(n), keyId: id16() }),
        (n: string) => ({ ...dmBody(n), keyId: null }),
        (n: string) => {
          const { keyId: _k, ...rest } = dmBody(n);
          return rest;
        },
      ],
      'keyId',
    );
  });

  test('check 2: room not an id16 answers invalid field to', async () => {
    const bad = ['abc', id16() + 'A', b64(15), b64(17), '+' + id16().slice(1), id16() + '==', 7, null];
    await expectInvalid(
      bad.map((room) => () => roomBody(room as string, id16())),
      'to',
    );
  });

  test('check 2: room message with keyId not an id16 answers invalid field keyId', async () => {
    const bad = ['dm', b64(15), b64(17), '/' + id16().slice(1), 5, undefined];
    await expectInvalid(
      bad.map((keyId) => () => roomBody(id16(), keyId as string)),
      'keyId',
    );
  });

  test('check 2: iv not 12 bytes of b64url answers invalid field iv', async () => {
    const bad = [b64(11), b64(13), '+' + iv().slice(1), iv() + '=', '', 12, undefined];
    await expectInvalid(
      bad.map((v) => (n: string) => ({ ...dmBody(n), iv: v })),
      'iv',
    );
  });

  test('check 2: ct not b64url or decoding to fewer than 16 bytes answers invalid field ct', async () => {
    const bad = [ct(15), ct(1), '', '+' + ct(32).slice(1), ct(32).slice(0, -1) + '=', 'AAAAA', 'AAAA AAAA AAAA AAAA AAAA AAAA', 32, undefined];
    await expectInvalid(
      bad.map((v) => (n: string) => ({ ...dmBody(n), ct: v })),
      'ct',
    );
  });

  test('check 2: ct of exactly 16 bytes is accepted', async () => {
    const { alice, a1, bob } = await pair();
    const r = await send(alice, { ...dmBody(bob.nick), ct: ct(16) }, a1);
    assert.equal(r.status, 202, r.text);
  });

  test('check 2 precedence: the first failing field in the order id, to, keyId, iv, ct is named', async () => {
    const { alice, a1, bob, b1 } = await pair();
    const n = bob.nick;
    const cases: [unknown, string][] = [
      [{ id: 'x', to: {}, keyId: 'no', iv: 'x', ct: 'x' }, 'id'],
      [{ id: ulid(), to: { dm: 'X' }, keyId: 'no', iv: 'x', ct: 'x' }, 'to'],
      [{ id: ulid(), to: { dm: n }, keyId: 'no', iv: 'x', ct: 'x' }, 'keyId'],
      [{ id: ulid(), to: { room: id16() }, keyId: 'dm', iv: 'x', ct: 'x' }, 'keyId'],
      [{ id: ulid(), to: { dm: n }, keyId: 'dm', iv: 'x', ct: 'x' }, 'iv'],
      [{ id: ulid(), to: { dm: n }, keyId: 'dm', iv: iv(), ct: 'x' }, 'ct'],
      [[], 'id'], // JSON that is not an object has no fields
    ];
    for (const [body, field] of cases) assertError(await send(alice, body, a1), 400, 'invalid', field);
    await assertQueueEmpty(bob, b1);
  });
});

describe('check 3: clock window (server clock under test control)', () => {
  let clocked: TestServer;
  const T = Date.now();
  before(async () => {
    clocked = await startServer({}, { now: () => T });
  });
  after(async () => {
    await clocked.close();
  });

  test('check 3: ULID time more than 5 minutes behind or ahead of server time answers 400 clock_skew; exactly 5 minutes passes', async () => {
    const a = await userWithDevices(clocked, 1);
    const b = await userWithDevices(clocked, 1);
    const [a1, b1] = [a.devices[0]!, b.devices[0]!];
    assertError(await send(a.c, dmBody(b.c.nick, ulid(T - 300_001)), a1), 400, 'clock_skew');
    assertError(await send(a.c, dmBody(b.c.nick, ulid(T + 300_001)), a1), 400, 'clock_skew');
    assertError(await send(a.c, dmBody(b.c.nick, ulid(T - 3_600_000)), a1), 400, 'clock_skew');
    await assertQueueEmpty(b.c, b1);
    const behind = await send(a.c, dmBody(b.c.nick, ulid(T - 300_000)), a1);
    assert.equal(behind.status, 202, behind.text);
    const ahead = await send(a.c, dmBody(b.c.nick, ulid(T + 300_000)), a1);
    assert.equal(ahead.status, 202, ahead.text);
  });
});

describe('check 3 with the real clock', () => {
  test('check 3: ULID time just inside the window passes, just outside answers clock_skew (both directions)', async () => {
    const { alice, a1, bob, b1 } = await pair();
    assertError(await send(alice, dmBody(bob.nick, ulid(Date.now() - 305_000)), a1), 400, 'clock_skew');
    assertError(await send(alice, dmBody(bob.nick, ulid(Date.now() + 305_000)), a1), 400, 'clock_skew');
    await assertQueueEmpty(bob, b1);
    assert.equal((await send(alice, dmBody(bob.nick, ulid(Date.now() - 295_000)), a1)).status, 202);
    assert.equal((await send(alice, dmBody(bob.nick, ulid(Date.now() + 295_000)), a1)).status, 202);
  });

  test('check 2 before 3: a malformed body with a skewed ULID answers invalid', async () => {
    const { alice, a1, bob, b1 } = await pair();
    assertError(await send(alice, { ...dmBody(bob.nick, ulid(Date.now() - 3_600_000)), iv: 'short' }, a1), 400, 'invalid', 'iv');
    await assertQueueEmpty(bob, b1);
  });

  test('check 3 before 4: a skewed ULID with a foreign or missing X-Device answers clock_skew', async () => {
    const { alice, bob, b1 } = await pair();
    assertError(await send(alice, dmBody(bob.nick, ulid(Date.now() + 3_600_000)), b1), 400, 'clock_skew');
    assertError(await send(alice, dmBody(bob.nick, ulid(Date.now() + 3_600_000))), 400, 'clock_skew');
    await assertQueueEmpty(bob, b1);
  });

  test('check 3 before 5: a skewed ULID to an unknown nick or a foreign room answers clock_skew', async () => {
    const { alice, a1 } = await pair();
    assertError(await send(alice, dmBody(nick(), ulid(Date.now() - 3_600_000)), a1), 400, 'clock_skew');
    assertError(await send(alice, roomBody(id16(), id16(), ulid(Date.now() - 3_600_000)), a1), 400, 'clock_skew');
  });
});

describe('check 4: X-Device', () => {
  test('check 4: X-Device missing, unknown, malformed or of another account answers 403 unknown_device and queues nothing', async () => {
    const { alice, bob, b1 } = await pair();
    assertError(await send(alice, dmBody(bob.nick)), 403, 'unknown_device');
    assertError(await send(alice, dmBody(bob.nick), 'never-registered-device'), 403, 'unknown_device');
    assertError(await send(alice, dmBody(bob.nick), 'x'), 403, 'unknown_device');
    assertError(await send(alice, dmBody(bob.nick), b1), 403, 'unknown_device');
    await assertQueueEmpty(bob, b1);
  });

  test('check 4: a deleted own device answers 403 unknown_device', async () => {
    const { alice, a1, bob, b1 } = await pair();
    const gone = await addDevice(alice);
    assert.equal((await alice.del(`/api/devices/${gone}`)).status, 204);
    assertError(await send(alice, dmBody(bob.nick), gone), 403, 'unknown_device');
    assert.equal((await send(alice, dmBody(bob.nick), a1)).status, 202);
    const q = await replay(bob, b1);
    assert.equal(q.msgIds.length, 1);
  });

  test('check 2 before 4: a malformed body with a foreign or missing X-Device answers invalid, not unknown_device', async () => {
    const { alice, bob, b1 } = await pair();
    assertError(await send(alice, { ...dmBody(bob.nick), ct: ct(8) }, b1), 400, 'invalid', 'ct');
    assertError(await send(alice, { ...dmBody(bob.nick), id: 'nope' }), 400, 'invalid', 'id');
    assertError(await send(alice, { ...dmBody(bob.nick), to: { dm: 'NO' } }, 'unknown-device-1'), 400, 'invalid', 'to');
    await assertQueueEmpty(bob, b1);
  });

  test('check 1 before 4: a body that is not JSON with a foreign X-Device answers bad_json; too large answers too_large', async () => {
    const { alice, bob, b1 } = await pair();
    assertError(await send(alice, '{oops', b1), 400, 'bad_json');
    assertError(await send(alice, { ...dmBody(bob.nick), ct: 'A'.repeat(33_000) }), 413, 'too_large');
    await assertQueueEmpty(bob, b1);
  });

  test('check 4 before 5: a foreign X-Device answers unknown_device even to an unknown nick, own nick or foreign room', async () => {
    const { alice, b1 } = await pair();
    assertError(await send(alice, dmBody(nick()), b1), 403, 'unknown_device');
    assertError(await send(alice, dmBody(alice.nick), b1), 403, 'unknown_device');
    assertError(await send(alice, roomBody(id16(), id16()), b1), 403, 'unknown_device');
  });
});

describe('check 5: target rights', () => {
  test('check 5: a room the caller is not a member of answers 403 not_member and queues nothing', async () => {
    const { alice, a1, bob, b1 } = await pair();
    const room = await createRoom(bob);
    assertError(await send(alice, roomBody(room.id, room.keyIds[0]!), a1), 403, 'not_member');
    await assertQueueEmpty(bob, b1);
  });

  test('check 5: a room that does not exist answers 403 not_member', async () => {
    const { alice, a1 } = await pair();
    assertError(await send(alice, roomBody(id16(), id16()), a1), 403, 'not_member');
  });

  test('check 5: a removed member answers 403 not_member', async () => {
    const { alice, a1, bob, b1 } = await pair();
    const room = await createRoom(bob, [alice]);
    await changeMembers(bob, room, [bob.nick], [], [alice.nick]);
    assertError(await send(alice, roomBody(room.id, room.keyIds.at(-1)!), a1), 403, 'not_member');
    await assertQueueEmpty(bob, b1);
  });

  test('check 5: keyId that is not a key of the room answers 400 unknown_key and queues nothing', async () => {
    const { alice, a1, bob, b1 } = await pair();
    const room = await createRoom(alice, [bob]);
    const other = await createRoom(alice);
    assertError(await send(alice, roomBody(room.id, id16()), a1), 400, 'unknown_key');
    assertError(await send(alice, roomBody(room.id, other.keyIds[0]!), a1), 400, 'unknown_key');
    await assertQueueEmpty(bob, b1);
  });

  test('check 5: an older key of the room is still accepted', async () => {
    const { alice, a1, bob, b1 } = await pair();
    const room = await createRoom(alice, [bob]);
    await changeMembers(alice, room, [alice.nick, bob.nick], [], []); // rotation: a third key
    const ids: string[] = [];
    for (const keyId of room.keyIds) {
      const r = await send(alice, roomBody(room.id, keyId), a1);
      assert.equal(r.status, 202, r.text);
      ids.push(r.json.id);
    }
    const q = await replay(bob, b1);
    assert.deepEqual(q.msgIds, ids);
  });

  test('check 5 precedence: a non-member with an unknown keyId answers not_member, not unknown_key', async () => {
    const { alice, a1, bob } = await pair();
    const room = await createRoom(bob);
    assertError(await send(alice, roomBody(room.id, id16()), a1), 403, 'not_member');
  });

  test('check 5: a DM to a nick with no account answers 404 unknown_user', async () => {
    const { alice, a1, bob, b1 } = await pair();
    assertError(await send(alice, dmBody(nick()), a1), 404, 'unknown_user');
    await assertQueueEmpty(bob, b1);
  });

  test('check 5: a DM to a deleted account answers 404 unknown_user', async () => {
    const { alice, a1 } = await pair();
    const carol = await userWithDevices(server, 1);
    assert.equal((await carol.c.del('/api/me', { authKey: carol.c.authKey })).status, 204);
    assertError(await send(alice, dmBody(carol.c.nick), a1), 404, 'unknown_user');
  });

  test("check 5: a DM to the caller's own nick answers 400 self and queues nothing", async () => {
    const a = await userWithDevices(server, 2);
    assertError(await send(a.c, dmBody(a.c.nick), a.devices[0]), 400, 'self');
    await assertQueueEmpty(a.c, a.devices[1]!);
  });
});
