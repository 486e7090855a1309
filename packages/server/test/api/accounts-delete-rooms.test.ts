/**
 * Account deletion and the rooms of the deleted account, over HTTP in every backend mode
 * (docs/API.md, DELETE /api/me: the account leaves every room as by `leave`, so
 * ownership passes to the earliest-joined member, the remaining members get `room` with
 * needsRekey true and no key, an emptied room is deleted). Also when deletions and leaves of one
 * room race: the events and the end state must be those of the leaves run in some order.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Stream, id16, nick, rooms, signup, startServer, userWithDevices, wk, type Client, type TestServer } from '@svc/testkit/harness';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

type User = { c: Client; devices: string[] };

/** Who owns the room and who is in it, in join order. */
interface Shape {
  owner: string;
  members: string[];
}

/** A room owned by `owner`; each of `joiners` is added by its own members call, so join order is the list order. */
async function roomWith(owner: Client, joiners: Client[] = []): Promise<string> {
  const id = id16();
  const r = await owner.post('/api/rooms', { id, name: 'Room', keyId: id16(), keys: [wk(owner.nick)] });
  assert.equal(r.status, 201, r.text);
  const members = [owner.nick];
  for (const j of joiners) {
    members.push(j.nick);
    const m = await owner.post(`/api/rooms/${id}/members`, { add: [j.nick], remove: [], keyId: id16(), keys: members.map(wk) });
    assert.equal(m.status, 200, m.text);
  }
  return id;
}

async function openAll(users: User[]): Promise<Stream[]> {
  const ss = await Promise.all(users.flatMap((u) => u.devices.map((d) => Stream.open(u.c, d))));
  for (const s of ss) assert.ok(await s.ready());
  return ss;
}

const deleteAccount = async (c: Client) => {
  const r = await c.del('/api/me', { authKey: c.authKey });
  assert.equal(r.status, 204, r.text);
};

const leave = async (c: Client, id: string, device?: string) => {
  const r = await c.post(`/api/rooms/${id}/leave`, undefined, device !== undefined ? { device } : {});
  assert.equal(r.status, 204, r.text);
};

const shapeKey = (s: Shape) => `${s.owner}|${s.members.join(',')}`;

/** The room events a stream got, as shapes; each must carry needsRekey and no key. */
function roomShapes(s: Stream, id: string): Shape[] {
  return s
    .named('room')
    .map((e) => e.json)
    .filter((r) => r.id === id)
    .map((r) => {
      assert.equal(r.needsRekey, true, 'a leave leaves a rekey owed');
      assert.deepEqual(r.keys, [], 'a leave brings no new key');
      return { owner: r.owner as string, members: r.members as string[] };
    });
}

/** Waits until the stream has `n` room events of the room, then lets stragglers arrive. */
async function roomEvents(s: Stream, id: string, n: number): Promise<Shape[]> {
  await s.until((ev) => ev.filter((e) => e.event === 'room' && e.json?.id === id).length >= n, 10_000);
  await Stream.settle(300);
  return roomShapes(s, id);
}

/**
 * The shapes the remaining members heard, in whatever order they arrived, must be the chain of
 * leaves by `leavers` run one after another in some order, each by the rule (an owner who leaves
 * passes the room to the earliest-joined member). Returns the order found.
 */
function assertChain(start: Shape, leavers: string[], heard: Shape[]): string[] {
  const sorted = [...heard].sort((a, b) => b.members.length - a.members.length);
  const order: string[] = [];
  let cur = start;
  for (const next of sorted) {
    const gone = cur.members.filter((m) => !next.members.includes(m));
    assert.equal(gone.length, 1, `one member left between ${shapeKey(cur)} and ${shapeKey(next)}`);
    const leaver = gone[0]!;
    assert.ok(leavers.includes(leaver) && !order.includes(leaver), `${leaver} left once`);
    const members = cur.members.filter((m) => m !== leaver);
    assert.deepEqual(next, { owner: cur.owner === leaver ? members[0] : cur.owner, members }, `after ${leaver} left`);
    order.push(leaver);
    cur = next;
  }
  return order;
}

/** The room as `c` lists it, without keys. */
async function listed(c: Client, id: string): Promise<Shape & { needsRekey: boolean }> {
  const r = (await rooms(c)).find((x) => x.id === id);
  assert.ok(r, `${c.nick} lists the room`);
  return { owner: r.owner, members: r.members, needsRekey: r.needsRekey };
}

test('an owner who deletes the account passes the room to the earliest-joined member; every device of the others gets `room` once, with needsRekey and no key', async () => {
  const owner = await userWithDevices(server, 2);
  const first = await userWithDevices(server, 2, nick('zz'));
  const second = await userWithDevices(server, 1, nick('aa'));
  const outsider = await userWithDevices(server, 1);
  const id = await roomWith(owner.c, [first.c, second.c]);
  const ownerStreams = await openAll([owner]);
  const others = await openAll([first, second]);
  const [outsiderStream] = await openAll([outsider]);

  await deleteAccount(owner.c);
  const expected = { owner: first.c.nick, members: [first.c.nick, second.c.nick] };
  for (const s of others) assert.deepEqual(await roomEvents(s, id, 1), [expected]);
  for (const s of ownerStreams) assert.ok(await s.closedByServer(), "the deleted account's streams end");
  assert.deepEqual(
    outsiderStream!.events.filter((e) => e.event !== 'ready'),
    [],
  );
  for (const u of [first, second]) assert.deepEqual(await listed(u.c, id), { ...expected, needsRekey: true });
  // The new owner has the owner's rights: its rotation clears the rekey owed.
  const rot = await first.c.post(`/api/rooms/${id}/members`, { add: [], remove: [], keyId: id16(), keys: expected.members.map(wk) });
  assert.equal(rot.status, 200, rot.text);
  assert.equal(rot.json.needsRekey, false);
  for (const s of [...others, outsiderStream!]) s.close();
});

test('an owner alone in the room deletes the account: the room is deleted, nobody hears of it, and its id is free', async () => {
  const owner = await userWithDevices(server, 1);
  const other = await userWithDevices(server, 1);
  const id = await roomWith(owner.c);
  const [otherStream] = await openAll([other]);
  await deleteAccount(owner.c);
  await Stream.settle(300);
  assert.deepEqual(
    otherStream!.events.filter((e) => e.event !== 'ready'),
    [],
  );
  const again = await other.c.post('/api/rooms', { id, name: 'Again', keyId: id16(), keys: [wk(other.c.nick)] });
  assert.equal(again.status, 201, again.text);
  assert.deepEqual(again.json.members, [other.c.nick]);
  otherStream!.close();
});

test('an owner deleting the account while the next in line leaves: both orders end with the third member owning the room, and the events tell one order', async () => {
  for (let round = 0; round < 3; round++) {
    const owner = await userWithDevices(server, 1);
    const next = await userWithDevices(server, 2);
    const third = await userWithDevices(server, 2);
    const fourth = await userWithDevices(server, 1);
    const id = await roomWith(owner.c, [next.c, third.c, fourth.c]);
    const start = { owner: owner.c.nick, members: [owner.c.nick, next.c.nick, third.c.nick, fourth.c.nick] };
    const stay = await openAll([third, fourth]);
    const [, nextOther] = await openAll([next]);

    await Promise.all([deleteAccount(owner.c), leave(next.c, id, next.devices[0])]);
    const heard = await roomEvents(stay[0]!, id, 2);
    const order = assertChain(start, [owner.c.nick, next.c.nick], heard);
    for (const s of stay.slice(1))
      assert.deepEqual((await roomEvents(s, id, 2)).map(shapeKey).sort(), heard.map(shapeKey).sort(), 'every remaining device heard the same');
    const end = { owner: third.c.nick, members: [third.c.nick, fourth.c.nick] };
    for (const u of [third, fourth]) assert.deepEqual(await listed(u.c, id), { ...end, needsRekey: true });
    // The leaver's other device hears room_left, and the room only if the owner left first (it was then a member).
    assert.ok(await nextOther!.until((ev) => ev.some((e) => e.event === 'room_left')));
    await Stream.settle(200);
    assert.deepEqual(
      nextOther!.named('room_left').map((e) => e.json),
      [{ id }],
    );
    const ownerFirst = order[0] === owner.c.nick;
    assert.deepEqual(roomShapes(nextOther!, id), ownerFirst ? [{ owner: next.c.nick, members: start.members.slice(1) }] : []);
    for (const s of [...stay, nextOther!]) s.close();
  }
});

test('the owner and the next in line deleting their accounts at once: the third member owns the room, and every remaining device hears one order', async () => {
  for (let round = 0; round < 3; round++) {
    const owner = await userWithDevices(server, 1);
    const next = await userWithDevices(server, 1);
    const third = await userWithDevices(server, 2, nick('zz'));
    const fourth = await userWithDevices(server, 1, nick('aa'));
    const id = await roomWith(owner.c, [next.c, third.c, fourth.c]);
    const start = { owner: owner.c.nick, members: [owner.c.nick, next.c.nick, third.c.nick, fourth.c.nick] };
    const stay = await openAll([third, fourth]);

    await Promise.all([deleteAccount(owner.c), deleteAccount(next.c)]);
    const heard = await roomEvents(stay[0]!, id, 2);
    assertChain(start, [owner.c.nick, next.c.nick], heard);
    for (const s of stay.slice(1)) assert.deepEqual((await roomEvents(s, id, 2)).map(shapeKey).sort(), heard.map(shapeKey).sort());
    const end = { owner: third.c.nick, members: [third.c.nick, fourth.c.nick] };
    for (const u of [third, fourth]) assert.deepEqual(await listed(u.c, id), { ...end, needsRekey: true });
    for (const s of stay) s.close();
  }
});

test('many members deleting their accounts at once: the survivors hear one chain of leaves and keep the room, owned by the earliest-joined survivor', async () => {
  const users: User[] = [];
  for (let i = 0; i < 8; i++) users.push(await userWithDevices(server, 1, nick(String.fromCharCode(122 - i).repeat(2))));
  const id = await roomWith(
    users[0]!.c,
    users.slice(1).map((u) => u.c),
  );
  const start = { owner: users[0]!.c.nick, members: users.map((u) => u.c.nick) };
  const leaving = [0, 1, 2, 4, 6].map((i) => users[i]!);
  const survivors = [3, 5, 7].map((i) => users[i]!);
  const stay = await openAll(survivors);

  await Promise.all(leaving.map((u) => deleteAccount(u.c)));
  const heard = await roomEvents(stay[0]!, id, leaving.length);
  assert.equal(heard.length, leaving.length, 'one room event per leave');
  assertChain(
    start,
    leaving.map((u) => u.c.nick),
    heard,
  );
  for (const s of stay.slice(1)) assert.deepEqual((await roomEvents(s, id, leaving.length)).map(shapeKey).sort(), heard.map(shapeKey).sort());
  const end = { owner: survivors[0]!.c.nick, members: survivors.map((u) => u.c.nick) };
  for (const u of survivors) assert.deepEqual(await listed(u.c, id), { ...end, needsRekey: true });
  for (const s of stay) s.close();
});

test('every member deleting the account at once: the room is deleted and its id is free', async () => {
  const users: User[] = [];
  for (let i = 0; i < 5; i++) users.push(await userWithDevices(server, 1));
  const id = await roomWith(
    users[0]!.c,
    users.slice(1).map((u) => u.c),
  );
  await Promise.all(users.map((u) => deleteAccount(u.c)));
  const other = await signup(server);
  const again = await other.post('/api/rooms', { id, name: 'Again', keyId: id16(), keys: [wk(other.nick)] });
  assert.equal(again.status, 201, again.text);
  assert.deepEqual(again.json.members, [other.nick]);
});
