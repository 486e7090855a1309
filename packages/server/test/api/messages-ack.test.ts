/**
 * POST /api/ack (docs/API.md) and the device queue cap of docs/API.md (10,000
 * envelopes per device, oldest dropped).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { addDevice, dmBody, startServer, ulid, userWithDevices, type Client, type TestServer } from '@svc/testkit/harness';
import { ack, assertError, replay, send } from './messaging-helpers.js';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

/** Bob (with `n` devices) holding `count` envelopes from alice. */
async function queued(count: number, n = 1): Promise<{ alice: Client; a1: string; bob: Client; bDevs: string[]; ids: string[] }> {
  const a = await userWithDevices(server, 1);
  const b = await userWithDevices(server, n);
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const r = await send(a.c, dmBody(b.c.nick), a.devices[0]);
    assert.equal(r.status, 202, r.text);
    ids.push(r.json.id);
  }
  return { alice: a.c, a1: a.devices[0]!, bob: b.c, bDevs: b.devices, ids };
}

describe('POST /api/ack', () => {
  test('ack: ids not an array of strings answers 400 invalid field ids and removes nothing', async () => {
    const { bob, bDevs, ids } = await queued(2);
    const b1 = bDevs[0]!;
    for (const bad of [undefined, null, ids[0], { 0: ids[0] }, 5, [ids[0], 7], [ids[0], null], [[ids[0]]]]) {
      assertError(await ack(bob, bad, b1), 400, 'invalid', 'ids');
    }
    assertError(await bob.post('/api/ack', {}, { device: b1 }), 400, 'invalid', 'ids');
    assertError(await bob.post('/api/ack', [ids[0]], { device: b1 }), 400, 'invalid', 'ids');
    assert.deepEqual((await replay(bob, b1)).msgIds, ids);
  });

  test('ack: at most 500 ids; 501 answers 400 invalid field ids and removes nothing, 500 is accepted', async () => {
    const { bob, bDevs, ids } = await queued(2);
    const b1 = bDevs[0]!;
    const filler = Array.from({ length: 499 }, () => ulid());
    assertError(await ack(bob, [...ids, ...filler], b1), 400, 'invalid', 'ids'); // 501
    assert.deepEqual((await replay(bob, b1)).msgIds, ids);
    const r = await ack(bob, [ids[0], ...filler], b1); // 500
    assert.equal(r.status, 204, r.text);
    assert.deepEqual((await replay(bob, b1)).msgIds, [ids[1]]);
  });

  test('ack: X-Device missing, unknown or of another account answers 403 unknown_device and removes nothing', async () => {
    const { alice, a1, bob, bDevs, ids } = await queued(1);
    const b1 = bDevs[0]!;
    assertError(await ack(bob, ids), 403, 'unknown_device');
    assertError(await ack(bob, ids, 'no-such-device-1'), 403, 'unknown_device');
    assertError(await ack(bob, ids, a1), 403, 'unknown_device');
    assertError(await ack(alice, ids, b1), 403, 'unknown_device');
    assert.deepEqual((await replay(bob, b1)).msgIds, ids);
  });

  test('ack precedence: the ids shape is checked before the device (bad ids with a foreign X-Device answers invalid)', async () => {
    const { alice, a1, bob, bDevs } = await queued(1);
    assertError(await ack(bob, 'nope', a1), 400, 'invalid', 'ids');
    assertError(
      await ack(
        bob,
        Array.from({ length: 501 }, () => 'x'),
      ),
      400,
      'invalid',
      'ids',
    );
    assertError(await alice.post('/api/ack', '{not json', { device: bDevs[0]! }), 400, 'bad_json');
  });

  test('ack: answers 204 with no body, and acknowledged envelopes are not replayed while the others are', async () => {
    const { bob, bDevs, ids } = await queued(3);
    const b1 = bDevs[0]!;
    const r = await ack(bob, [ids[0], ids[2]], b1);
    assert.equal(r.status, 204);
    assert.equal(r.text, '');
    assert.deepEqual((await replay(bob, b1)).msgIds, [ids[1]]);
    assert.equal((await ack(bob, [ids[1]], b1)).status, 204);
    assert.deepEqual((await replay(bob, b1)).names, ['ready']);
  });

  test('ack: ids not in the device queue are ignored (204), the listed ones that are queued still leave', async () => {
    const { alice, a1, bob, bDevs, ids } = await queued(2);
    const b1 = bDevs[0]!;
    const foreign = await send(alice, dmBody(bob.nick), a1); // queued for b1 too
    const r = await ack(bob, [ulid(), 'not-an-id', '', ids[0], ids[0]], b1);
    assert.equal(r.status, 204, r.text);
    assert.deepEqual((await replay(bob, b1)).msgIds, [ids[1], foreign.json.id]);
    assert.equal((await ack(bob, [], b1)).status, 204);
    assert.equal((await ack(bob, [ids[0]], b1)).status, 204, 'acking twice is fine');
    assert.deepEqual((await replay(bob, b1)).msgIds, [ids[1], foreign.json.id]);
  });

  test("ack: one device's ack does not remove the entry from another device's queue", async () => {
    const { alice, a1, bob, bDevs, ids } = await queued(2, 2);
    const [b1, b2] = bDevs as [string, string];
    assert.equal((await ack(bob, ids, b1)).status, 204);
    assert.deepEqual((await replay(bob, b1)).msgIds, []);
    assert.deepEqual((await replay(bob, b2)).msgIds, ids);
    // the sender's own other devices keep their copies when the recipient acks
    const a2 = await addDevice(alice);
    const r = await send(alice, dmBody(bob.nick), a1);
    assert.equal((await ack(bob, [r.json.id], b1)).status, 204);
    assert.equal((await ack(bob, [r.json.id], b2)).status, 204);
    assert.deepEqual((await replay(alice, a2)).msgIds, [r.json.id]);
  });
});

describe('queue cap (docs/API.md)', () => {
  test('queue cap: a device queue holds at most 10,000 envelopes; past that the oldest are dropped', async () => {
    const a = await userWithDevices(server, 1);
    const b = await userWithDevices(server, 1);
    const a1 = a.devices[0]!;
    const b1 = b.devices[0]!;
    const store = server.app.deps.store;
    // 10,000 envelopes through the store (the same operation the send route ends in), then 3 via HTTP
    const now = Date.now();
    const seeded = Array.from({ length: 10_000 }, () => ulid(now));
    const seed = async (i: number) => {
      const r = await store.sendMessage({
        id: seeded[i]!,
        from: a.c.nick,
        to: { dm: b.c.nick },
        keyId: 'dm',
        iv: 'AAAAAAAAAAAAAAAA',
        ct: 'AAAAAAAAAAAAAAAAAAAAAA',
        senderDevice: a1,
        now,
      });
      assert.equal('status' in r && r.status, 'queued');
    };
    // The oldest five one after another, so that they are queued in this order; the rest many at
    // a time, as concurrent requests send them (one at a time, each PostgreSQL commit waiting for
    // its own flush, took one to three minutes).
    for (let i = 0; i < 5; i++) await seed(i);
    for (let i = 5; i < seeded.length; i += 250) await Promise.all(Array.from({ length: Math.min(250, seeded.length - i) }, (_, j) => seed(i + j)));
    const full = await store.readQueue(b1, 0, 20_000);
    assert.equal(full.length, 10_000);
    const extra: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await send(a.c, dmBody(b.c.nick), a1);
      assert.equal(r.status, 202, r.text);
      extra.push(r.json.id);
    }
    const q = await replay(b.c, b1);
    assert.equal(q.msgIds.length, 10_000);
    assert.deepEqual(q.msgIds.slice(0, 2), seeded.slice(3, 5), 'the three oldest were dropped');
    assert.deepEqual(q.msgIds.slice(-3), extra, 'the newest are kept, in order');
    assert.equal(new Set(q.msgIds).size, 10_000);
    // acking frees room: after 3 acks, 3 more fit without dropping anything
    assert.equal((await ack(b.c, q.msgIds.slice(0, 3), b1)).status, 204);
    for (let i = 0; i < 3; i++) assert.equal((await send(a.c, dmBody(b.c.nick), a1)).status, 202);
    const after2 = await store.readQueue(b1, 0, 20_000);
    assert.equal(after2.length, 10_000);
    assert.equal(after2[0]!.id, q.msgIds[3]);
  });
});
