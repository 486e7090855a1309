/**
 * Which devices get which events (docs/API.md, the table of events and who gets them):
 * `room` and `room_left` are not queued, and an event caused by a request that carried X-Device
 * never goes to that device.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Stream, ct, dmBody, id16, iv, startServer, userWithDevices, type TestServer } from '@svc/testkit/harness';
import { changeMembers, createRoom, gotMsg, replay, roomBody, send } from './messaging-helpers.js';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

const names = (s: Stream) => s.events.map((e) => e.event);

test('room and room_left are not queued: a device offline at the time gets neither on replay', async () => {
  const a = await userWithDevices(server, 2);
  const b = await userWithDevices(server, 2);
  const [a1, a2] = a.devices as [string, string];
  const [b1, b2] = b.devices as [string, string];
  const sB2 = await Stream.open(b.c, b2); // online witness; b1 and a2 stay offline
  assert.ok(await sB2.ready());

  const room = await createRoom(a.c, [b.c], { device: a1 }); // a2 would get `room` (creator's other device)
  assert.ok(await sB2.until((ev) => ev.some((e) => e.event === 'room')), 'an online member device gets `room`');
  await changeMembers(a.c, room, [a.c.nick], [], [b.c.nick], { device: a1 });
  assert.ok(await sB2.until((ev) => ev.some((e) => e.event === 'room_left')), 'an online removed device gets `room_left`');
  assert.deepEqual(sB2.named('room_left')[0]!.json, { id: room.id });
  sB2.close();

  assert.deepEqual((await replay(b.c, b1)).names, ['ready'], 'nothing replayed to the offline member device');
  assert.deepEqual((await replay(a.c, a2)).names, ['ready'], "nothing replayed to the creator's offline device");
  // while msg events are queued for the same offline devices
  const r = await send(b.c, dmBody(a.c.nick), b1);
  assert.equal(r.status, 202);
  assert.deepEqual((await replay(a.c, a2)).msgIds, [r.json.id]);
});

test('room_left after a room deletion and after a leave is not queued either', async () => {
  const a = await userWithDevices(server, 1);
  const b = await userWithDevices(server, 2);
  const [b1, b2] = b.devices as [string, string];
  const room = await createRoom(a.c, [b.c]);
  const room2 = await createRoom(a.c, [b.c]);
  assert.equal((await a.c.del(`/api/rooms/${room.id}`)).status, 204);
  assert.equal((await b.c.post(`/api/rooms/${room2.id}/leave`, undefined, { device: b2 })).status, 204);
  assert.deepEqual((await replay(b.c, b1)).names, ['ready']);
  assert.deepEqual((await replay(a.c, a.devices[0]!)).names, ['ready']);
});

test("X-Device: the device that sent a message never gets it; the sender's other devices do", async () => {
  const a = await userWithDevices(server, 2);
  const b = await userWithDevices(server, 1);
  const [a1, a2] = a.devices as [string, string];
  const s1 = await Stream.open(a.c, a1);
  const s2 = await Stream.open(a.c, a2);
  assert.ok((await s1.ready()) && (await s2.ready()));
  const body = dmBody(b.c.nick);
  assert.equal((await send(a.c, body, a1)).status, 202);
  assert.ok(await gotMsg(s2, body.id));
  await Stream.settle();
  assert.deepEqual(names(s1), ['ready']);
  s1.close();
  s2.close();
});

test("X-Device: room creation with X-Device sends `room` to the creator's other devices only", async () => {
  const a = await userWithDevices(server, 2);
  const [a1, a2] = a.devices as [string, string];
  const s1 = await Stream.open(a.c, a1);
  const s2 = await Stream.open(a.c, a2);
  assert.ok((await s1.ready()) && (await s2.ready()));
  const id = id16();
  const keyId = id16();
  const r = await a.c.post('/api/rooms', { id, name: 'scope', keyId, keys: [{ to: a.c.nick, iv: iv(), ct: ct() }] }, { device: a1 });
  assert.equal(r.status, 201, r.text);
  assert.ok(await s2.until((ev) => ev.some((e) => e.event === 'room')));
  const ev = s2.named('room')[0]!.json;
  assert.equal(ev.id, id);
  assert.deepEqual(
    ev.keys.map((k: { keyId: string }) => k.keyId),
    [keyId],
  );
  await Stream.settle();
  assert.deepEqual(names(s1), ['ready'], 'the calling device gets the response, not the event');
  s1.close();
  s2.close();
});

test('X-Device: a members change with X-Device sends `room` to every member device except the calling one', async () => {
  const a = await userWithDevices(server, 2);
  const b = await userWithDevices(server, 1);
  const [a1, a2] = a.devices as [string, string];
  const room = await createRoom(a.c);
  const sA1 = await Stream.open(a.c, a1);
  const sA2 = await Stream.open(a.c, a2);
  const sB = await Stream.open(b.c, b.devices[0]!);
  for (const s of [sA1, sA2, sB]) assert.ok(await s.ready());
  await changeMembers(a.c, room, [a.c.nick, b.c.nick], [b.c.nick], [], { device: a1 });
  assert.ok(await sA2.until((ev) => ev.some((e) => e.event === 'room')));
  assert.ok(await sB.until((ev) => ev.some((e) => e.event === 'room')));
  await Stream.settle();
  assert.deepEqual(names(sA1), ['ready']);
  for (const s of [sA1, sA2, sB]) s.close();
});

test("X-Device: a leave with X-Device sends `room_left` to the leaver's other devices only, `room` to the remaining members", async () => {
  const a = await userWithDevices(server, 1);
  const b = await userWithDevices(server, 2);
  const [b1, b2] = b.devices as [string, string];
  const room = await createRoom(a.c, [b.c]);
  const sA = await Stream.open(a.c, a.devices[0]!);
  const sB1 = await Stream.open(b.c, b1);
  const sB2 = await Stream.open(b.c, b2);
  for (const s of [sA, sB1, sB2]) assert.ok(await s.ready());
  assert.equal((await b.c.post(`/api/rooms/${room.id}/leave`, undefined, { device: b1 })).status, 204);
  assert.ok(await sB2.until((ev) => ev.some((e) => e.event === 'room_left')));
  assert.ok(await sA.until((ev) => ev.some((e) => e.event === 'room')));
  assert.equal(sA.named('room')[0]!.json.needsRekey, true);
  await Stream.settle();
  assert.deepEqual(names(sB1), ['ready']);
  for (const s of [sA, sB1, sB2]) s.close();
});

test('X-Device: a room deletion with X-Device sends `room_left` to every member device except the calling one', async () => {
  const a = await userWithDevices(server, 2);
  const b = await userWithDevices(server, 1);
  const [a1, a2] = a.devices as [string, string];
  const room = await createRoom(a.c, [b.c]);
  const sA1 = await Stream.open(a.c, a1);
  const sA2 = await Stream.open(a.c, a2);
  const sB = await Stream.open(b.c, b.devices[0]!);
  for (const s of [sA1, sA2, sB]) assert.ok(await s.ready());
  assert.equal((await a.c.del(`/api/rooms/${room.id}`, undefined, { device: a1 })).status, 204);
  assert.ok(await sA2.until((ev) => ev.some((e) => e.event === 'room_left')));
  assert.ok(await sB.until((ev) => ev.some((e) => e.event === 'room_left')));
  await Stream.settle();
  assert.deepEqual(names(sA1), ['ready']);
  for (const s of [sA1, sA2, sB]) s.close();
  // and a message into the deleted room is refused
  assert.equal((await send(a.c, roomBody(room.id, room.keyIds[1]!), a1)).status, 403);
});
