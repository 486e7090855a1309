/**
 * POST /api/messages, group 7 of messages-checks.test.ts (docs/API.md, the Envelope
 * and its delivery): the 202
 * answer, the envelope as delivered (fields, order, service-set from and ts), the exact target
 * devices, queueing for offline devices, and idempotent retries.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Stream, ct, dmBody, iv, startServer, ulid, userWithDevices, type TestServer } from '@svc/testkit/harness';
import { assertError, changeMembers, createRoom, gotMsg, replay, roomBody, send } from './messaging-helpers.js';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

test('check 7: an accepted send answers 202 with exactly {id, ts}, ts the service time of acceptance', async () => {
  const a = await userWithDevices(server, 1);
  const b = await userWithDevices(server, 1);
  const body = dmBody(b.c.nick);
  const before = Date.now();
  const r = await send(a.c, body, a.devices[0]);
  const afterT = Date.now();
  assert.equal(r.status, 202, r.text);
  assert.match(r.headers.get('content-type') ?? '', /^application\/json; charset=utf-8$/);
  assert.deepEqual(Object.keys(r.json), ['id', 'ts']);
  assert.equal(r.json.id, body.id);
  assert.ok(Number.isInteger(r.json.ts));
  assert.ok(r.json.ts >= before && r.json.ts <= afterT, `ts ${r.json.ts} not in [${before}, ${afterT}]`);
});

test('envelope: the msg event data is exactly {id, to, from, keyId, iv, ct, ts} in this order, for dm and room', async () => {
  const a = await userWithDevices(server, 1);
  const b = await userWithDevices(server, 1);
  const dm = dmBody(b.c.nick);
  const r1 = await send(a.c, dm, a.devices[0]);
  assert.equal(r1.status, 202, r1.text);
  const room = await createRoom(a.c, [b.c]);
  const rm = roomBody(room.id, room.keyIds[1]!);
  const r2 = await send(a.c, rm, a.devices[0]);
  assert.equal(r2.status, 202, r2.text);

  const q = await replay(b.c, b.devices[0]!);
  const [e1, e2] = q.events.filter((e) => e.event === 'msg');
  assert.equal(e1!.data, JSON.stringify({ id: dm.id, to: { dm: b.c.nick }, from: a.c.nick, keyId: 'dm', iv: dm.iv, ct: dm.ct, ts: r1.json.ts }));
  assert.equal(e2!.data, JSON.stringify({ id: rm.id, to: { room: room.id }, from: a.c.nick, keyId: rm.keyId, iv: rm.iv, ct: rm.ct, ts: r2.json.ts }));
  assert.equal(e1!.id, dm.id);
  assert.equal(e2!.id, rm.id);
});

test('envelope: from and ts are set by the service; client-sent from, ts and other extra fields are ignored', async () => {
  const a = await userWithDevices(server, 1);
  const b = await userWithDevices(server, 1);
  const body = { ...dmBody(b.c.nick), from: b.c.nick, ts: 1, extra: 'x' };
  const r = await send(a.c, body, a.devices[0]);
  assert.equal(r.status, 202, r.text);
  assert.notEqual(r.json.ts, 1);
  const [e] = (await replay(b.c, b.devices[0]!)).events.filter((x) => x.event === 'msg');
  assert.equal(e!.data, JSON.stringify({ id: body.id, to: body.to, from: a.c.nick, keyId: 'dm', iv: body.iv, ct: body.ct, ts: r.json.ts }));
});

test('targets (dm): every device of the recipient and every other device of the sender, never the sending device; live to open streams, queued for the others', async () => {
  const a = await userWithDevices(server, 3);
  const b = await userWithDevices(server, 2);
  const other = await userWithDevices(server, 1);
  const [a1, a2, a3] = a.devices as [string, string, string];
  const [b1, b2] = b.devices as [string, string];
  const sA1 = await Stream.open(a.c, a1);
  const sA2 = await Stream.open(a.c, a2);
  const sB1 = await Stream.open(b.c, b1);
  const sO = await Stream.open(other.c, other.devices[0]!);
  for (const s of [sA1, sA2, sB1, sO]) assert.ok(await s.ready());

  const r = await send(a.c, dmBody(b.c.nick), a1);
  assert.equal(r.status, 202, r.text);
  const id = r.json.id as string;
  assert.ok(await gotMsg(sB1, id), 'recipient device online gets it live');
  assert.ok(await gotMsg(sA2, id), "sender's other online device gets it live");
  await Stream.settle();
  assert.equal(sA1.named('msg').length, 0, 'the sending device gets nothing');
  assert.equal(sO.named('msg').length, 0, 'an unrelated account gets nothing');
  for (const s of [sA1, sA2, sB1, sO]) s.close();

  // offline targets got it queued; the sending device has nothing queued
  assert.deepEqual((await replay(b.c, b2)).msgIds, [id]);
  assert.deepEqual((await replay(a.c, a3)).msgIds, [id]);
  assert.deepEqual((await replay(a.c, a1)).msgIds, []);
  assert.deepEqual((await replay(other.c, other.devices[0]!)).msgIds, []);
  // delivered live, still queued until acknowledged
  assert.deepEqual((await replay(b.c, b1)).msgIds, [id]);
  assert.deepEqual((await replay(a.c, a2)).msgIds, [id]);
});

test('targets (room): every device of every member except the sending device; not non-members, not removed members', async () => {
  const a = await userWithDevices(server, 2);
  const b = await userWithDevices(server, 1);
  const c = await userWithDevices(server, 2);
  const gone = await userWithDevices(server, 1);
  const outsider = await userWithDevices(server, 1);
  const room = await createRoom(a.c, [b.c, c.c, gone.c]);
  await changeMembers(a.c, room, [a.c.nick, b.c.nick, c.c.nick], [], [gone.c.nick]);
  const keyId = room.keyIds.at(-1)!;

  const sA1 = await Stream.open(a.c, a.devices[0]!);
  const sB1 = await Stream.open(b.c, b.devices[0]!);
  const sOut = await Stream.open(outsider.c, outsider.devices[0]!);
  for (const s of [sA1, sB1, sOut]) assert.ok(await s.ready());

  const r = await send(a.c, roomBody(room.id, keyId), a.devices[0]);
  assert.equal(r.status, 202, r.text);
  const id = r.json.id as string;
  assert.ok(await gotMsg(sB1, id));
  await Stream.settle();
  assert.equal(sA1.named('msg').length, 0, 'the sending device gets nothing');
  assert.equal(sOut.named('msg').length, 0, 'a non-member gets nothing');
  for (const s of [sA1, sB1, sOut]) s.close();

  assert.deepEqual((await replay(a.c, a.devices[1]!)).msgIds, [id], "sender's other device");
  assert.deepEqual((await replay(c.c, c.devices[0]!)).msgIds, [id]);
  assert.deepEqual((await replay(c.c, c.devices[1]!)).msgIds, [id]);
  assert.deepEqual((await replay(a.c, a.devices[0]!)).msgIds, []);
  assert.deepEqual((await replay(gone.c, gone.devices[0]!)).msgIds, [], 'a removed member');
  assert.deepEqual((await replay(outsider.c, outsider.devices[0]!)).msgIds, []);

  // a member sending: the owner's devices are targets, the sending member's device is not
  const r2 = await send(b.c, roomBody(room.id, keyId), b.devices[0]);
  assert.equal(r2.status, 202, r2.text);
  assert.deepEqual((await replay(a.c, a.devices[0]!)).msgIds, [r2.json.id]);
  assert.deepEqual((await replay(b.c, b.devices[0]!)).msgIds, [id]);
});

test('queueing: envelopes sent while a device is offline are replayed in sending order when it connects', async () => {
  const a = await userWithDevices(server, 1);
  const b = await userWithDevices(server, 1);
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    const r = await send(a.c, dmBody(b.c.nick), a.devices[0]);
    assert.equal(r.status, 202);
    ids.push(r.json.id);
  }
  const q = await replay(b.c, b.devices[0]!);
  assert.deepEqual(q.names, ['msg', 'msg', 'msg', 'msg', 'msg', 'ready']);
  assert.deepEqual(q.msgIds, ids);
});

test('idempotent retry: the same id by the same sender answers 202 with the original {id, ts} and queues nothing twice', async () => {
  const a = await userWithDevices(server, 2);
  const b = await userWithDevices(server, 1);
  const sB = await Stream.open(b.c, b.devices[0]!);
  assert.ok(await sB.ready());
  const body = dmBody(b.c.nick);
  const first = await send(a.c, body, a.devices[0]);
  assert.equal(first.status, 202, first.text);
  assert.ok(await gotMsg(sB, body.id));
  await new Promise((r) => setTimeout(r, 5));
  const again = await send(a.c, body, a.devices[0]);
  assert.equal(again.status, 202, again.text);
  assert.deepEqual(again.json, first.json);
  // from another device of the same sender, with other bytes: still the same message
  const fromOther = await send(a.c, { ...body, iv: iv(), ct: ct() }, a.devices[1]);
  assert.equal(fromOther.status, 202, fromOther.text);
  assert.deepEqual(fromOther.json, first.json);
  await Stream.settle();
  assert.equal(sB.named('msg').length, 1, 'one live event');
  sB.close();
  const q = await replay(b.c, b.devices[0]!);
  assert.deepEqual(q.msgIds, [body.id]);
  assert.equal(JSON.parse(q.events[0]!.data).ct, body.ct, 'the original envelope is kept');
  assert.deepEqual((await replay(a.c, a.devices[1]!)).msgIds, [body.id], "the sender's other device has it once");
});

test('idempotent retry: a retry after the recipient acknowledged does not queue the envelope again', async () => {
  const a = await userWithDevices(server, 1);
  const b = await userWithDevices(server, 1);
  const body = dmBody(b.c.nick);
  const first = await send(a.c, body, a.devices[0]);
  assert.equal(first.status, 202);
  assert.equal((await b.c.post('/api/ack', { ids: [body.id] }, { device: b.devices[0]! })).status, 204);
  const again = await send(a.c, body, a.devices[0]);
  assert.equal(again.status, 202);
  assert.deepEqual(again.json, first.json);
  assert.deepEqual((await replay(b.c, b.devices[0]!)).msgIds, []);
});

test('id conflict: the same id from another sender answers 409 id_conflict and queues nothing', async () => {
  const a = await userWithDevices(server, 1);
  const b = await userWithDevices(server, 1);
  const c = await userWithDevices(server, 1);
  const id = ulid();
  assert.equal((await send(a.c, dmBody(b.c.nick, id), a.devices[0])).status, 202);
  assertError(await send(c.c, dmBody(b.c.nick, id), c.devices[0]), 409, 'id_conflict');
  const room = await createRoom(c.c, [b.c]);
  assertError(await send(c.c, roomBody(room.id, room.keyIds[1]!, id), c.devices[0]), 409, 'id_conflict');
  const q = await replay(b.c, b.devices[0]!);
  assert.deepEqual(q.msgIds, [id]);
  assert.equal(q.events[0]!.json.from, a.c.nick);
});
