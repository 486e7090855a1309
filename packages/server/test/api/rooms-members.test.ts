/** Room members: docs/API.md (POST /api/rooms/{id}/members, its checks in order, its events and the room limits). */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  assertError,
  rooms,
  wk,
  Stream,
  b64,
  id16,
  nick,
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

const mbody = (add: string[], remove: string[], final: string[], keyId = id16()) => ({ add, remove, keyId, keys: final.map(wk) });
const post = (c: Client, roomId: string, b: unknown, device?: string) =>
  c.post(`/api/rooms/${roomId}/members`, b, device !== undefined ? { device } : {});

/** A room owned by `owner` with `others` added in one members call. */
async function roomWith(owner: Client, others: Client[] = []): Promise<{ id: string; keyIds: string[] }> {
  const id = id16();
  const k0 = id16();
  const r = await owner.post('/api/rooms', { id, name: 'Room', keyId: k0, keys: [wk(owner.nick)] });
  assert.equal(r.status, 201, r.text);
  if (others.length === 0) return { id, keyIds: [k0] };
  const b = mbody(
    others.map((o) => o.nick),
    [],
    [owner.nick, ...others.map((o) => o.nick)],
  );
  assert.equal((await post(owner, id, b)).status, 200);
  return { id, keyIds: [k0, b.keyId] };
}

/** A members call that must be refused, and must change nothing that any of `observers` can see. */
async function refused(caller: Client, roomId: string, b: unknown, status: number, error: string, field: string | undefined, observers: Client[]) {
  const before = await Promise.all(observers.map(rooms));
  assertError(await post(caller, roomId, b), status, error, field);
  assert.deepEqual(await Promise.all(observers.map(rooms)), before);
}

/** alice owns a room with bob; carol is a user outside it. */
async function trio() {
  const alice = await signup(server);
  const bob = await signup(server);
  const carol = await signup(server);
  const room = await roomWith(alice, [bob]);
  return { alice, bob, carol, room, all: [alice, bob, carol] };
}

test("members add answers 200 Room with keys holding only the caller's new key; the new member sees the room", async () => {
  const alice = await signup(server);
  const bob = await signup(server);
  const { id, keyIds } = await roomWith(alice);
  const b = mbody([bob.nick], [], [alice.nick, bob.nick]);
  const r = await post(alice, id, b);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(Object.keys(r.json).sort(), ['createdAt', 'id', 'keys', 'members', 'name', 'needsRekey', 'owner']);
  assert.equal(r.json.id, id);
  assert.equal(r.json.owner, alice.nick);
  assert.deepEqual([...r.json.members].sort(), [alice.nick, bob.nick].sort());
  assert.equal(r.json.needsRekey, false);
  assert.deepEqual(r.json.keys, [{ keyId: b.keyId, from: alice.nick, iv: b.keys[0]!.iv, ct: b.keys[0]!.ct }]);
  const [bobRoom] = await rooms(bob);
  assert.deepEqual([...bobRoom!.members].sort(), [alice.nick, bob.nick].sort());
  assert.deepEqual(bobRoom!.keys, [{ keyId: b.keyId, from: alice.nick, iv: b.keys[1]!.iv, ct: b.keys[1]!.ct }]);
  assert.deepEqual(
    (await rooms(alice))[0]!.keys.map((k) => k.keyId),
    [...keyIds, b.keyId],
  );
});

test('members remove answers 200; the removed member no longer sees the room', async () => {
  const { alice, bob, room } = await trio();
  const r = await post(alice, room.id, mbody([], [bob.nick], [alice.nick]));
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.members, [alice.nick]);
  assert.deepEqual(await rooms(bob), []);
});

test('members add and remove in one call', async () => {
  const { alice, bob, carol, room } = await trio();
  const r = await post(alice, room.id, mbody([carol.nick], [bob.nick], [alice.nick, carol.nick]));
  assert.equal(r.status, 200, r.text);
  assert.deepEqual([...r.json.members].sort(), [alice.nick, carol.nick].sort());
  assert.deepEqual(await rooms(bob), []);
  assert.equal((await rooms(carol)).length, 1);
});

test('members with empty add and remove is a pure key rotation', async () => {
  const { alice, bob, room } = await trio();
  const b = mbody([], [], [alice.nick, bob.nick]);
  const r = await post(alice, room.id, b);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual([...r.json.members].sort(), [alice.nick, bob.nick].sort());
  assert.deepEqual(
    r.json.keys.map((k: { keyId: string }) => k.keyId),
    [b.keyId],
  );
  assert.deepEqual(
    (await rooms(alice))[0]!.keys.map((k) => k.keyId),
    [...room.keyIds, b.keyId],
  );
  assert.deepEqual(
    (await rooms(bob))[0]!.keys.map((k) => k.keyId),
    [room.keyIds[1], b.keyId],
  );
});

test('members: duplicate nicks inside add or remove collapse to one', async () => {
  const { alice, bob, carol, room } = await trio();
  const r = await post(alice, room.id, mbody([carol.nick, carol.nick], [bob.nick, bob.nick], [alice.nick, carol.nick]));
  assert.equal(r.status, 200, r.text);
  assert.deepEqual([...r.json.members].sort(), [alice.nick, carol.nick].sort());
});

test('members with a body that is not JSON answers 400 bad_json and changes nothing', async () => {
  const { bob, room, all } = await trio();
  await refused(all[0]!, room.id, '{"add":', 400, 'bad_json', undefined, all);
  await refused(bob, room.id, 'x', 400, 'bad_json', undefined, all);
});

test('members rule: add holding a value that is not a nick answers 400 invalid field add (before remove)', async () => {
  const { alice, bob, carol, room, all } = await trio();
  const final = [alice.nick, bob.nick, carol.nick];
  for (const add of [[carol.nick.toUpperCase()], ['a'], [carol.nick, 'x-y'], [42], [null], carol.nick, null]) {
    await refused(alice, room.id, { ...mbody([], [], final), add }, 400, 'invalid', 'add', all);
  }
  await refused(alice, room.id, mbody(['X'], ['Y'], final), 400, 'invalid', 'add', all);
});

test('members rule: remove holding a value that is not a nick answers 400 invalid field remove', async () => {
  const { alice, room, all } = await trio();
  for (const remove of [['Bob'], ['b'], [7], [null], 'bob', null]) {
    await refused(alice, room.id, { ...mbody([], [], [alice.nick]), remove }, 400, 'invalid', 'remove', all);
  }
});

test('members rule: a nick in both add and remove answers 400 invalid field remove (before keyId)', async () => {
  const { alice, bob, carol, room, all } = await trio();
  await refused(alice, room.id, mbody([carol.nick], [carol.nick], [alice.nick, bob.nick, carol.nick]), 400, 'invalid', 'remove', all);
  await refused(alice, room.id, mbody([bob.nick], [bob.nick], [alice.nick], 'bad'), 400, 'invalid', 'remove', all);
});

test('members rule: a keyId that is not id16 answers 400 invalid field keyId (before keys)', async () => {
  const { alice, bob, room, all } = await trio();
  for (const keyId of ['dm', b64(15), '', null])
    await refused(alice, room.id, mbody([], [], [alice.nick, bob.nick], keyId as string), 400, 'invalid', 'keyId', all);
  await refused(alice, room.id, { ...mbody([], [], [], 'x'), keys: 'x' }, 400, 'invalid', 'keyId', all);
});

test('members rule: a keys element of the wrong shape answers 400 invalid field keys (before not_owner)', async () => {
  const { alice, bob, carol, room, all } = await trio();
  const good = () => wk(alice.nick);
  const bad: unknown[] = [
    [good(), { ...wk(bob.nick), to: 'BOB' }],
    [good(), { ...wk(bob.nick), iv: b64(11) }],
    [good(), { ...wk(bob.nick), ct: b64(15) }],
    [good(), { ...wk(bob.nick), ct: '$$$$' + b64(30) }],
    [good(), null],
    'keys',
  ];
  for (const keys of bad) await refused(alice, room.id, { add: [], remove: [], keyId: id16(), keys }, 400, 'invalid', 'keys', all);
  // a non-owner and an outsider still get the shape error first
  await refused(bob, room.id, { add: [], remove: [], keyId: id16(), keys: [{ to: 'X' }] }, 400, 'invalid', 'keys', all);
  await refused(carol, room.id, { add: [], remove: [], keyId: id16(), keys: 'x' }, 400, 'invalid', 'keys', all);
});

test('members rule: a caller who is not the owner answers 403 not_owner (before unknown_user)', async () => {
  const { alice, bob, carol, room, all } = await trio();
  await refused(bob, room.id, mbody([], [], [alice.nick, bob.nick]), 403, 'not_owner', undefined, all);
  await refused(bob, room.id, mbody([carol.nick], [], [alice.nick, bob.nick, carol.nick]), 403, 'not_owner', undefined, all);
  await refused(carol, room.id, mbody([carol.nick], [], [alice.nick, bob.nick, carol.nick]), 403, 'not_owner', undefined, all);
  await refused(bob, room.id, mbody(['nosuch_user_x'], [], [alice.nick, bob.nick, 'nosuch_user_x']), 403, 'not_owner', undefined, all);
});

test('members on a room that does not exist answers 403 not_owner', async () => {
  const { alice, all } = await trio();
  await refused(alice, id16(), mbody([], [], [alice.nick]), 403, 'not_owner', undefined, all);
});

test('members rule: a nick in add that is not a user answers 404 unknown_user (before remove of a non-member)', async () => {
  const { alice, bob, carol, room, all } = await trio();
  const ghost = nick('gh');
  await refused(alice, room.id, mbody([ghost], [], [alice.nick, bob.nick, ghost]), 404, 'unknown_user', undefined, all);
  await refused(alice, room.id, mbody([carol.nick, ghost], [], [alice.nick, bob.nick, carol.nick, ghost]), 404, 'unknown_user', undefined, all);
  await refused(alice, room.id, mbody([ghost], [carol.nick], [alice.nick, bob.nick, ghost]), 404, 'unknown_user', undefined, all);
});

test('members rule: adding a deleted account answers 404 unknown_user', async () => {
  const { alice, bob, room, all } = await trio();
  const gone = await signup(server);
  assert.equal((await gone.del('/api/me', { authKey: gone.authKey })).status, 204);
  await refused(alice, room.id, mbody([gone.nick], [], [alice.nick, bob.nick, gone.nick]), 404, 'unknown_user', undefined, all);
});

test('members rule: removing a nick that is not a member answers 400 invalid field remove (before owner)', async () => {
  const { alice, bob, carol, room, all } = await trio();
  await refused(alice, room.id, mbody([], [carol.nick], [alice.nick, bob.nick]), 400, 'invalid', 'remove', all);
  await refused(alice, room.id, mbody([], [nick('gh')], [alice.nick, bob.nick]), 400, 'invalid', 'remove', all);
  await refused(alice, room.id, mbody([], [alice.nick, carol.nick], [bob.nick]), 400, 'invalid', 'remove', all);
});

test('members rule: removing the owner answers 400 owner (before key_exists)', async () => {
  const { alice, bob, room, all } = await trio();
  await refused(alice, room.id, mbody([], [alice.nick], [bob.nick]), 400, 'owner', undefined, all);
  await refused(alice, room.id, mbody([], [alice.nick], [bob.nick], room.keyIds[0]), 400, 'owner', undefined, all);
});

test('members rule: a keyId already used by the room answers 409 key_exists (before keys_mismatch)', async () => {
  const { alice, bob, room, all } = await trio();
  for (const keyId of room.keyIds) {
    await refused(alice, room.id, mbody([], [], [alice.nick, bob.nick], keyId), 409, 'key_exists', undefined, all);
    await refused(alice, room.id, mbody([], [], [alice.nick], keyId), 409, 'key_exists', undefined, all);
  }
});

test('members: a keyId used by another room is accepted', async () => {
  const { alice, bob, room } = await trio();
  const other = await roomWith(alice);
  const r = await post(alice, other.id, mbody([bob.nick], [], [alice.nick, bob.nick], room.keyIds[1]));
  assert.equal(r.status, 200, r.text);
});

test('members rule: keys[].to differing from the final membership answers 400 keys_mismatch', async () => {
  const { alice, bob, carol, room, all } = await trio();
  const dave = await signup(server);
  const everyone = [...all, dave];
  const cases: [string[], string[], string[]][] = [
    [[], [], [alice.nick]], // a member left out
    [[], [], [alice.nick, bob.nick, carol.nick]], // a key for a non-member
    [[], [], [bob.nick]], // owner's key missing
    [[carol.nick], [], [alice.nick, bob.nick]], // the added member left out
    [[], [bob.nick], [alice.nick, bob.nick]], // a key for the removed member
    [[carol.nick], [bob.nick], [alice.nick, carol.nick, dave.nick]],
    [[], [], []],
  ];
  for (const [add, remove, final] of cases) await refused(alice, room.id, mbody(add, remove, final), 400, 'keys_mismatch', undefined, everyone);
  // two keys for one member
  await refused(
    alice,
    room.id,
    { add: [], remove: [], keyId: id16(), keys: [wk(alice.nick), wk(bob.nick), wk(bob.nick)] },
    400,
    'keys_mismatch',
    undefined,
    everyone,
  );
});

test('members is atomic: a refused change leaves members, keys and needsRekey as they were', async () => {
  const { alice, bob, carol, room, all } = await trio();
  assert.equal((await bob.post(`/api/rooms/${room.id}/leave`)).status, 204);
  assert.equal((await rooms(alice))[0]!.needsRekey, true);
  // would add carol and rotate, but the keys do not match
  await refused(alice, room.id, mbody([carol.nick], [], [alice.nick]), 400, 'keys_mismatch', undefined, all);
  await refused(alice, room.id, mbody([carol.nick, nick('gh')], [], [alice.nick, carol.nick]), 404, 'unknown_user', undefined, all);
  const [r] = await rooms(alice);
  assert.deepEqual(r!.members, [alice.nick]);
  assert.equal(r!.needsRekey, true);
  assert.deepEqual(await rooms(carol), []);
});

test('members clears needsRekey', async () => {
  const { alice, bob, carol, room } = await trio();
  assert.equal((await carol.post(`/api/rooms/${room.id}/leave`)).status, 204); // not a member: no change
  assert.equal((await rooms(alice))[0]!.needsRekey, false);
  const add = await post(alice, room.id, mbody([carol.nick], [], [alice.nick, bob.nick, carol.nick]));
  assert.equal(add.status, 200);
  assert.equal((await carol.post(`/api/rooms/${room.id}/leave`)).status, 204);
  assert.equal((await rooms(alice))[0]!.needsRekey, true);
  assert.equal((await rooms(bob))[0]!.needsRekey, true);
  const r = await post(alice, room.id, mbody([], [], [alice.nick, bob.nick]));
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.needsRekey, false);
  assert.equal((await rooms(alice))[0]!.needsRekey, false);
  assert.equal((await rooms(bob))[0]!.needsRekey, false);
});

test("members events: each final member's devices get `room` with only their own new key, removed members get room_left, the calling device gets none", async () => {
  const alice = await userWithDevices(server, 2);
  const bob = await userWithDevices(server, 1);
  const carol = await userWithDevices(server, 2);
  const dave = await userWithDevices(server, 1);
  const erin = await userWithDevices(server, 1);
  const room = await roomWith(alice.c, [carol.c, dave.c]);
  const a1 = alice.devices[0]!;
  const open = async (u: { c: Client; devices: string[] }) => Promise.all(u.devices.map((d) => Stream.open(u.c, d)));
  const [sa, sb, sc, sd, se] = await Promise.all([open(alice), open(bob), open(carol), open(dave), open(erin)]);
  const streams = [...sa, ...sb, ...sc, ...sd, ...se];
  for (const s of streams) assert.ok(await s.ready());

  const b = mbody([bob.c.nick], [dave.c.nick], [alice.c.nick, carol.c.nick, bob.c.nick]);
  const r = await post(alice.c, room.id, b, a1);
  assert.equal(r.status, 200, r.text);
  const keyFor = (n: string) => {
    const k = b.keys.find((x) => x.to === n)!;
    return [{ keyId: b.keyId, from: alice.c.nick, iv: k.iv, ct: k.ct }];
  };
  const expectRoom = async (s: Stream, n: string) => {
    assert.ok(await s.until((ev) => ev.some((e) => e.event === 'room')));
    const ev = s.named('room');
    assert.equal(ev.length, 1);
    assert.deepEqual(ev[0]!.json, { ...r.json, keys: keyFor(n) });
  };
  await expectRoom(sa[1]!, alice.c.nick);
  await expectRoom(sb[0]!, bob.c.nick);
  for (const s of sc) await expectRoom(s, carol.c.nick);
  assert.ok(await sd[0]!.until((ev) => ev.some((e) => e.event === 'room_left')));
  assert.deepEqual(
    sd[0]!.named('room_left').map((e) => e.json),
    [{ id: room.id }],
  );
  await Stream.settle();
  assert.deepEqual(
    sa[0]!.events.map((e) => e.event),
    ['ready'],
  );
  assert.deepEqual(
    sd[0]!.events.map((e) => e.event),
    ['ready', 'room_left'],
  );
  assert.deepEqual(
    se[0]!.events.map((e) => e.event),
    ['ready'],
  );
  for (const s of streams) s.close();
});

test('members: a refused change sends no event', async () => {
  const alice = await userWithDevices(server, 1);
  const bob = await userWithDevices(server, 1);
  const room = await roomWith(alice.c, [bob.c]);
  const s = await Stream.open(bob.c, bob.devices[0]!);
  assert.ok(await s.ready());
  assertError(await post(alice.c, room.id, mbody([], [], [alice.c.nick])), 400, 'keys_mismatch');
  assertError(await post(alice.c, room.id, mbody([], [bob.c.nick], [alice.c.nick], room.keyIds[0])), 409, 'key_exists');
  await Stream.settle();
  assert.deepEqual(
    s.events.map((e) => e.event),
    ['ready'],
  );
  s.close();
});
