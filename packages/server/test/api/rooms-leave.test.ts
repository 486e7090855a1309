/** Room leave and delete: docs/API.md (leave, DELETE, ownership) and their events. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  assertError,
  rooms,
  wk,
  Stream,
  ct,
  deviceId,
  id16,
  iv,
  nick,
  signup,
  startServer,
  ulid,
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

const snapshot = (cs: Client[]) => Promise.all(cs.map(rooms));
const leave = (c: Client, id: string, device?: string) => c.post(`/api/rooms/${id}/leave`, undefined, device !== undefined ? { device } : {});
const del = (c: Client, id: string, device?: string) => c.del(`/api/rooms/${id}`, undefined, device !== undefined ? { device } : {});

/** A room owned by `owner`; each of `joiners` is added in its own members call, in order (so join times differ). */
async function roomWith(owner: Client, joiners: Client[] = []): Promise<string> {
  const id = id16();
  const r = await owner.post('/api/rooms', { id, name: 'Room', keyId: id16(), keys: [wk(owner.nick)] });
  assert.equal(r.status, 201, r.text);
  let members = [owner.nick];
  for (const j of joiners) {
    members = [...members, j.nick];
    const m = await owner.post(`/api/rooms/${id}/members`, { add: [j.nick], remove: [], keyId: id16(), keys: members.map(wk) });
    assert.equal(m.status, 200, m.text);
  }
  return id;
}
const openAll = async (u: { c: Client; devices: string[] }) => {
  const ss = await Promise.all(u.devices.map((d) => Stream.open(u.c, d)));
  for (const s of ss) assert.ok(await s.ready());
  return ss;
};
const kinds = (s: Stream) => s.events.map((e) => e.event).filter((e) => e !== 'ready');

// ---- leave ----

test('leave by a caller who is not a member answers 204 and changes nothing', async () => {
  const a = await signup(server);
  const b = await signup(server);
  const outsider = await signup(server);
  const id = await roomWith(a, [b]);
  const before = await snapshot([a, b, outsider]);
  const r = await leave(outsider, id);
  assert.equal(r.status, 204);
  assert.equal(r.text, '');
  assert.deepEqual(await snapshot([a, b, outsider]), before);
});

test('leave of a room that does not exist answers 204', async () => {
  const a = await userWithDevices(server, 1);
  assert.equal((await leave(a.c, id16())).status, 204);
  assert.equal((await leave(a.c, id16(), a.devices[0])).status, 204);
});

test('leave by a member answers 204 and removes the caller; the room then needs a rekey', async () => {
  const a = await signup(server);
  const b = await signup(server);
  const c = await signup(server);
  const id = await roomWith(a, [b, c]);
  assert.equal((await leave(b, id)).status, 204);
  assert.deepEqual(await rooms(b), []);
  for (const x of [a, c]) {
    const [r] = await rooms(x);
    assert.deepEqual([...r!.members].sort(), [a.nick, c.nick].sort());
    assert.equal(r!.owner, a.nick);
    assert.equal(r!.needsRekey, true);
  }
});

test("leave events: remaining members get `room` with needsRekey true and keys []; the caller's other devices get room_left; the X-Device device gets nothing", async () => {
  const a = await userWithDevices(server, 2);
  const b = await userWithDevices(server, 3);
  const c = await userWithDevices(server, 1);
  const outsider = await userWithDevices(server, 1);
  const id = await roomWith(a.c, [b.c, c.c]);
  const [sa, sb, sc, so] = await Promise.all([openAll(a), openAll(b), openAll(c), openAll(outsider)]);
  assert.equal((await leave(b.c, id, b.devices[0])).status, 204);
  const [expected] = await rooms(a.c);
  for (const s of [...sa, ...sc]) {
    assert.ok(await s.until((ev) => ev.some((e) => e.event === 'room')));
    const ev = s.named('room');
    assert.equal(ev.length, 1);
    assert.deepEqual(ev[0]!.json, { ...expected!, keys: [] });
    assert.equal(ev[0]!.json.needsRekey, true);
    assert.deepEqual([...ev[0]!.json.members].sort(), [a.c.nick, c.c.nick].sort());
  }
  for (const s of sb.slice(1)) {
    assert.ok(await s.until((ev) => ev.some((e) => e.event === 'room_left')));
    assert.deepEqual(
      s.named('room_left').map((e) => e.json),
      [{ id }],
    );
  }
  await Stream.settle();
  assert.deepEqual(kinds(sb[0]!), []);
  for (const s of sb.slice(1)) assert.deepEqual(kinds(s), ['room_left']);
  for (const s of [...sa, ...sc]) assert.deepEqual(kinds(s), ['room']);
  assert.deepEqual(kinds(so[0]!), []);
  for (const s of [...sa, ...sb, ...sc, ...so]) s.close();
});

test('leave without X-Device: every device of the caller gets room_left', async () => {
  const a = await signup(server);
  const b = await userWithDevices(server, 2);
  const id = await roomWith(a, [b.c]);
  const sb = await openAll(b);
  assert.equal((await leave(b.c, id)).status, 204);
  for (const s of sb) {
    assert.ok(await s.until((ev) => ev.some((e) => e.event === 'room_left')));
    assert.deepEqual(s.named('room_left')[0]!.json, { id });
    s.close();
  }
});

test('leave with an X-Device that is not an own device answers 403 unknown_device and the caller stays', async () => {
  const a = await signup(server);
  const b = await signup(server);
  const other = await userWithDevices(server, 1);
  const id = await roomWith(a, [b]);
  const before = await snapshot([a, b]);
  assertError(await leave(b, id, other.devices[0]), 403, 'unknown_device');
  assertError(await leave(b, id, deviceId()), 403, 'unknown_device');
  assert.deepEqual(await snapshot([a, b]), before);
  // the device check also applies when the leave would be a no-op
  assertError(await leave(b, id16(), other.devices[0]), 403, 'unknown_device');
});

test('an owner who leaves passes ownership to the earliest-joined remaining member', async () => {
  const a = await signup(server);
  const first = await signup(server, nick('zz'));
  const second = await signup(server, nick('aa'));
  const id = await roomWith(a, [first, second]);
  assert.equal((await leave(a, id)).status, 204);
  let [r] = await rooms(second);
  assert.equal(r!.owner, first.nick);
  assert.deepEqual([...r!.members].sort(), [first.nick, second.nick].sort());
  // the new owner has the owner's rights, the other member does not
  assertError(
    await second.post(`/api/rooms/${id}/members`, { add: [], remove: [], keyId: id16(), keys: [wk(first.nick), wk(second.nick)] }),
    403,
    'not_owner',
  );
  const rot = await first.post(`/api/rooms/${id}/members`, { add: [], remove: [], keyId: id16(), keys: [wk(first.nick), wk(second.nick)] });
  assert.equal(rot.status, 200, rot.text);
  assert.equal((await leave(first, id)).status, 204);
  [r] = await rooms(second);
  assert.equal(r!.owner, second.nick);
  assert.deepEqual(r!.members, [second.nick]);
});

test('ownership passes by join time, not by the order of nicks or of creation of accounts', async () => {
  const later = await signup(server, nick('aa'));
  const a = await signup(server);
  const earlier = await signup(server, nick('zz'));
  const id = await roomWith(a, [earlier, later]);
  assert.equal((await leave(a, id)).status, 204);
  assert.equal((await rooms(later))[0]!.owner, earlier.nick);
});

test('the last member leaving deletes the room', async () => {
  const a = await userWithDevices(server, 2);
  const b = await signup(server);
  const id = await roomWith(a.c, [b]);
  assert.equal((await leave(b, id)).status, 204);
  const sa = await openAll(a);
  assert.equal((await leave(a.c, id, a.devices[0])).status, 204);
  assert.deepEqual(await rooms(a.c), []);
  assert.ok(await sa[1]!.until((ev) => ev.some((e) => e.event === 'room_left')));
  assert.deepEqual(sa[1]!.named('room_left')[0]!.json, { id });
  await Stream.settle();
  assert.deepEqual(kinds(sa[0]!), []);
  for (const s of sa) s.close();
  // the room is gone: nobody can send to it, and its id no longer exists
  const m = await a.c.post('/api/messages', { id: ulid(), to: { room: id }, keyId: id16(), iv: iv(), ct: ct() }, { device: a.devices[0]! });
  assertError(m, 403, 'not_member');
  assertError(await a.c.post(`/api/rooms/${id}/members`, { add: [], remove: [], keyId: id16(), keys: [wk(a.c.nick)] }), 403, 'not_owner');
  const again = await b.post('/api/rooms', { id, name: 'Reborn', keyId: id16(), keys: [wk(b.nick)] });
  assert.equal(again.status, 201, again.text);
  assert.deepEqual(await rooms(a.c), []);
});

// ---- delete ----

test('DELETE /api/rooms/{id} by a member who is not the owner, or by an outsider, answers 403 not_owner and changes nothing', async () => {
  const a = await signup(server);
  const b = await signup(server);
  const outsider = await signup(server);
  const id = await roomWith(a, [b]);
  const before = await snapshot([a, b]);
  assertError(await del(b, id), 403, 'not_owner');
  assertError(await del(outsider, id), 403, 'not_owner');
  assert.deepEqual(await snapshot([a, b]), before);
});

test('DELETE /api/rooms/{id} by the owner answers 204 and the room is gone for every member', async () => {
  const a = await signup(server);
  const b = await signup(server);
  const c = await signup(server);
  const keep = await roomWith(a, [b]);
  const id = await roomWith(a, [b, c]);
  const r = await del(a, id);
  assert.equal(r.status, 204);
  assert.equal(r.text, '');
  assert.deepEqual(
    (await rooms(a)).map((x) => x.id),
    [keep],
  );
  assert.deepEqual(
    (await rooms(b)).map((x) => x.id),
    [keep],
  );
  assert.deepEqual(await rooms(c), []);
});

test('DELETE /api/rooms/{id} of a room that does not exist answers 204, also when repeated', async () => {
  const a = await signup(server);
  assert.equal((await del(a, id16())).status, 204);
  const id = await roomWith(a);
  assert.equal((await del(a, id)).status, 204);
  assert.equal((await del(a, id)).status, 204);
  const outsider = await signup(server);
  assert.equal((await del(outsider, id)).status, 204);
});

test('DELETE /api/rooms/{id} events: every member, owner included, gets room_left except the calling X-Device device', async () => {
  const a = await userWithDevices(server, 2);
  const b = await userWithDevices(server, 2);
  const c = await userWithDevices(server, 1);
  const outsider = await userWithDevices(server, 1);
  const id = await roomWith(a.c, [b.c, c.c]);
  const [sa, sb, sc, so] = await Promise.all([openAll(a), openAll(b), openAll(c), openAll(outsider)]);
  assert.equal((await del(a.c, id, a.devices[0])).status, 204);
  for (const s of [sa[1]!, ...sb, ...sc]) {
    assert.ok(await s.until((ev) => ev.some((e) => e.event === 'room_left')));
    assert.deepEqual(
      s.named('room_left').map((e) => e.json),
      [{ id }],
    );
  }
  await Stream.settle();
  assert.deepEqual(kinds(sa[0]!), []);
  assert.deepEqual(kinds(so[0]!), []);
  for (const s of [sa[1]!, ...sb, ...sc]) assert.deepEqual(kinds(s), ['room_left']);
  for (const s of [...sa, ...sb, ...sc, ...so]) s.close();
});

test('DELETE /api/rooms/{id} refused with not_owner sends no event', async () => {
  const a = await userWithDevices(server, 1);
  const b = await userWithDevices(server, 1);
  const id = await roomWith(a.c, [b.c]);
  const [sa, sb] = await Promise.all([openAll(a), openAll(b)]);
  assertError(await del(b.c, id), 403, 'not_owner');
  await Stream.settle();
  assert.deepEqual(kinds(sa[0]!), []);
  assert.deepEqual(kinds(sb[0]!), []);
  for (const s of [...sa, ...sb]) s.close();
});
