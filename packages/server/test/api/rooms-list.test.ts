/** GET /api/rooms and room limits: docs/API.md (the Room resource and its keys, the room limits). */
import { after, before, test } from 'node:test';
import type { RoomKey } from '@svc/protocol';
import assert from 'node:assert/strict';
import { assertError, rooms, wk, id16, signup, startServer, type Client, type TestServer } from '@svc/testkit/harness';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

const ms = (n: number) => new Promise((r) => setTimeout(r, n));
async function create(c: Client, name = 'Room'): Promise<{ id: string; createdAt: number }> {
  const r = await c.post('/api/rooms', { id: id16(), name, keyId: id16(), keys: [wk(c.nick)] });
  assert.equal(r.status, 201, r.text);
  return r.json;
}
/** Members call with keys for exactly `final`; returns the wrapped keys sent, by recipient. */
async function change(owner: Client, id: string, add: string[], remove: string[], final: string[]) {
  const keyId = id16();
  const keys = final.map(wk);
  const r = await owner.post(`/api/rooms/${id}/members`, { add, remove, keyId, keys });
  assert.equal(r.status, 200, r.text);
  return { keyId, keys, res: r };
}
async function inBatches<T>(n: number, size: number, make: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < n; i += size) out.push(...(await Promise.all(Array.from({ length: Math.min(size, n - i) }, (_, j) => make(i + j)))));
  return out;
}

test('GET /api/rooms of an account in no room is []', async () => {
  const a = await signup(server);
  assert.deepEqual(await rooms(a), []);
});

test('GET /api/rooms lists every room where the caller is a member, ordered by createdAt oldest first (not by join time)', async () => {
  const a = await signup(server);
  const b = await signup(server);
  const r1 = await create(b, 'made by b first');
  await ms(5);
  const r2 = await create(a, 'made by a');
  await ms(5);
  const r3 = await create(b, 'made by b later');
  await ms(5);
  const r4 = await create(a, 'made by a later');
  await ms(5);
  await create(b, 'never joined by a');
  // a joins r3 before r1
  await change(b, r3.id, [a.nick], [], [b.nick, a.nick]);
  await change(b, r1.id, [a.nick], [], [b.nick, a.nick]);
  const list = await rooms(a);
  assert.deepEqual(
    list.map((r) => r.id),
    [r1.id, r2.id, r3.id, r4.id],
  );
  assert.deepEqual(
    list.map((r) => r.createdAt),
    [r1.createdAt, r2.createdAt, r3.createdAt, r4.createdAt],
  );
  for (const r of list) {
    assert.deepEqual(Object.keys(r).sort(), ['createdAt', 'id', 'keys', 'members', 'name', 'needsRekey', 'owner']);
    assert.ok(Array.isArray(r.members) && r.members.includes(a.nick));
    assert.ok(Array.isArray(r.keys));
    assert.equal(typeof r.needsRekey, 'boolean');
  }
});

test('GET /api/rooms: members is always an array; a room of one lists just that member', async () => {
  const a = await signup(server);
  const r = await create(a);
  const [room] = await rooms(a);
  assert.equal(room!.id, r.id);
  assert.deepEqual(room!.members, [a.nick]);
});

test('GET /api/rooms: keys holds every wrapped key addressed to the caller, oldest first, with who wrapped it', async () => {
  const a = await signup(server);
  const b = await signup(server);
  const c = await signup(server);
  const created = await a.post('/api/rooms', { id: id16(), name: 'Keys', keyId: id16(), keys: [wk(a.nick)] });
  const id = created.json.id as string;
  const k1 = await change(a, id, [b.nick], [], [a.nick, b.nick]);
  const k2 = await change(a, id, [c.nick], [], [a.nick, b.nick, c.nick]);
  assert.equal((await a.post(`/api/rooms/${id}/leave`)).status, 204); // b is owner now
  const k3 = await change(b, id, [], [], [b.nick, c.nick]);
  const expect = (k: { keyId: string; keys: { to: string; iv: string; ct: string }[] }, to: string, from: string): RoomKey => {
    const w = k.keys.find((x) => x.to === to)!;
    return { keyId: k.keyId, from, iv: w.iv, ct: w.ct };
  };
  assert.deepEqual((await rooms(b))[0]!.keys, [expect(k1, b.nick, a.nick), expect(k2, b.nick, a.nick), expect(k3, b.nick, b.nick)]);
  assert.deepEqual((await rooms(c))[0]!.keys, [expect(k2, c.nick, a.nick), expect(k3, c.nick, b.nick)]);
  // the members response itself holds only the caller's new key
  assert.deepEqual(k3.res.json.keys, [expect(k3, b.nick, b.nick)]);
});

test('GET /api/rooms keeps only the newest 64 wrapped keys per member (creation plus 65 rotations)', async () => {
  const a = await signup(server);
  const b = await signup(server);
  const keyIds = [id16()];
  const r = await a.post('/api/rooms', { id: id16(), name: 'Rotations', keyId: keyIds[0], keys: [wk(a.nick)] });
  assert.equal(r.status, 201);
  const id = r.json.id as string;
  const bFrom = 41;
  for (let i = 1; i <= 65; i++) {
    const k =
      i < bFrom
        ? await change(a, id, [], [], [a.nick])
        : i === bFrom
          ? await change(a, id, [b.nick], [], [a.nick, b.nick])
          : await change(a, id, [], [], [a.nick, b.nick]);
    keyIds.push(k.keyId);
  }
  assert.equal(keyIds.length, 66);
  // a got 66 keys and keeps the newest 64; b got 25 and keeps them all
  assert.deepEqual(
    (await rooms(a))[0]!.keys.map((k) => k.keyId),
    keyIds.slice(2),
  );
  assert.deepEqual(
    (await rooms(b))[0]!.keys.map((k) => k.keyId),
    keyIds.slice(bFrom),
  );
  // one more rotation drops a's next-oldest key
  const k = await change(a, id, [], [], [a.nick, b.nick]);
  assert.deepEqual(
    (await rooms(a))[0]!.keys.map((x) => x.keyId),
    [...keyIds.slice(3), k.keyId],
  );
});

test('a room holds at most 256 members: adding past it answers 409 limit_reached and changes nothing', async () => {
  const owner = await signup(server);
  const users = await inBatches(256, 32, () => signup(server));
  const id = (await create(owner)).id;
  const first = users.slice(0, 255).map((u) => u.nick);
  const full = await change(owner, id, first, [], [owner.nick, ...first]);
  assert.equal(full.res.json.members.length, 256);
  const before = await rooms(owner);
  const extra = users[255]!.nick;
  const r = await owner.post(`/api/rooms/${id}/members`, { add: [extra], remove: [], keyId: id16(), keys: [owner.nick, ...first, extra].map(wk) });
  assertError(r, 409, 'limit_reached');
  assert.deepEqual(await rooms(owner), before);
  assert.deepEqual(await rooms(users[255]!), []);
  // swapping one member for another stays within the limit
  const swapped = await change(owner, id, [extra], [first[0]!], [owner.nick, ...first.slice(1), extra]);
  assert.equal(swapped.res.json.members.length, 256);
});

test('an account belongs to at most 500 rooms: creating or being added past it answers 409 limit_reached', async () => {
  const a = await signup(server);
  const b = await signup(server);
  await inBatches(500, 50, () => create(a));
  assert.equal((await rooms(a)).length, 500);
  const id = id16();
  assertError(await a.post('/api/rooms', { id, name: 'one too many', keyId: id16(), keys: [wk(a.nick)] }), 409, 'limit_reached');
  assert.equal((await rooms(a)).length, 500);
  assert.equal((await b.post('/api/rooms', { id, name: 'id still free', keyId: id16(), keys: [wk(b.nick)] })).status, 201);
  const before = await rooms(b);
  assertError(
    await b.post(`/api/rooms/${id}/members`, { add: [a.nick], remove: [], keyId: id16(), keys: [wk(b.nick), wk(a.nick)] }),
    409,
    'limit_reached',
  );
  assert.deepEqual(await rooms(b), before);
  assert.equal((await rooms(a)).length, 500);
});
