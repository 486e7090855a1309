/**
 * Leaving rooms by `leave` and by account deletion (docs/API.md: an owner who leaves
 * passes ownership to the member with the earliest join time, the last member's leave deletes
 * the room, the remaining members owe a rekey; a deleted account leaves every
 * room as by `leave`). Written once and run against every store, alone and racing.
 *
 * Races are checked against the rule itself, never against one expected winner: the leaves of
 * one room run one after another in some order, each result must be what leaving in that order
 * gives, and the room must end as that order leaves it.
 */
import { describe, test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { DeleteAccountResult, LeaveResult, Store } from '../../src/store/types.js';
import { id16 } from '@svc/testkit/harness';
import { NOW, account, wrapped, type StoreFactory } from './suite.js';

/** What the members of a room see of it: who owns it and who is in it, in join order. */
interface Shape {
  owner: string;
  members: string[];
}

/** The rule of docs/API.md, written out on its own for the test: null when the room is deleted. */
function afterLeave(s: Shape, leaver: string): Shape | null {
  assert.ok(s.members.includes(leaver), `${leaver} leaves a room it is in`);
  const members = s.members.filter((m) => m !== leaver);
  if (members.length === 0) return null;
  return { owner: s.owner === leaver ? members[0]! : s.owner, members };
}

/** Two devices per account, so that fan-out lists are checked with more than one entry. */
const devicesOf = (nick: string) => [`${nick}-dev-1`, `${nick}-dev-2`];

interface Fixture {
  roomId: string;
  name: string;
  createdAt: number;
  start: Shape;
}

/** A room created by the first nick, the others added one members call each, so join order is the list order. */
async function roomOf(store: Store, nicks: string[]): Promise<Fixture> {
  for (const n of nicks) {
    if (!(await store.getAccount(n))) await store.registerAccount(account(n));
    for (const d of devicesOf(n)) await store.addDevice(n, d, NOW);
  }
  const roomId = id16();
  const [owner, ...rest] = nicks;
  const created = await store.createRoom({ id: roomId, name: `room of ${owner}`, owner: owner!, keyId: id16(), keys: [wrapped(owner!)], now: NOW });
  assert.ok('room' in created);
  const members = [owner!];
  for (const n of rest) {
    members.push(n);
    const r = await store.changeMembers({ roomId, caller: owner!, add: [n], remove: [], keyId: id16(), keys: members.map(wrapped), now: NOW });
    assert.ok('room' in r, JSON.stringify(r));
  }
  return { roomId, name: `room of ${owner}`, createdAt: NOW, start: { owner: owner!, members } };
}

/** Adds `nick` (whose account exists) to the room by its owner; it joins last. */
async function join(store: Store, f: Fixture, nick: string): Promise<void> {
  if (!(await store.getAccount(nick))) await store.registerAccount(account(nick));
  for (const d of devicesOf(nick)) await store.addDevice(nick, d, NOW);
  f.start.members.push(nick);
  const r = await store.changeMembers({
    roomId: f.roomId,
    caller: f.start.owner,
    add: [nick],
    remove: [],
    keyId: id16(),
    keys: f.start.members.map(wrapped),
    now: NOW,
  });
  assert.ok('room' in r, JSON.stringify(r));
}

/** The one leave of `roomId` inside an account deletion's result. */
function leaveIn(r: DeleteAccountResult, roomId: string): LeaveResult {
  const found = r.rooms.filter((l) => l.roomId === roomId);
  assert.equal(found.length, 1, `the deletion left ${roomId} once`);
  return found[0]!;
}

/**
 * Checks that `leaves` (all of one room, in any order) are a chain: sorted by how many members
 * stayed, each is exactly what leaving in that order gives, for the room and for its fan-out.
 * Returns the room's end state (null: deleted).
 */
function assertChain(f: Fixture, leaves: { nick: string; r: LeaveResult }[]): Shape | null {
  const stayed = (r: LeaveResult) => (r.deleted ? 0 : r.fanout!.room.members.length);
  const order = [...leaves].sort((a, b) => stayed(b.r) - stayed(a.r));
  let shape: Shape | null = f.start;
  for (const { nick, r } of order) {
    assert.ok(shape, `${nick} left a room that was already deleted`);
    const next = afterLeave(shape, nick);
    assert.equal(r.roomId, f.roomId);
    assert.equal(r.left, true, `${nick} was a member when its leave ran`);
    assert.deepEqual(r.callerDevices, devicesOf(nick), "the leaver's devices, to hear room_left");
    if (next === null) {
      assert.equal(r.deleted, true, `${nick} was the last member: the room is deleted`);
      assert.equal(r.fanout, null);
    } else {
      assert.equal(r.deleted, false);
      assert.deepEqual(
        r.fanout,
        {
          room: { id: f.roomId, name: f.name, owner: next.owner, members: next.members, createdAt: f.createdAt, keys: [], needsRekey: true },
          members: next.members.map((m) => ({ nick: m, devices: devicesOf(m), key: null })),
          removed: [],
        },
        `after ${nick} left`,
      );
    }
    shape = next;
  }
  return shape;
}

/** The room as each of its members lists it matches `shape`; nobody else lists it. */
async function assertStored(store: Store, f: Fixture, shape: Shape | null, everyone: string[]): Promise<void> {
  for (const n of everyone) {
    const listed = (await store.listRooms(n)).filter((r) => r.id === f.roomId);
    if (shape === null || !shape.members.includes(n)) {
      assert.deepEqual(listed, [], `${n} does not list the room`);
      continue;
    }
    assert.equal(listed.length, 1, `${n} lists the room`);
    const { keys, ...room } = listed[0]!;
    assert.deepEqual(room, { id: f.roomId, name: f.name, owner: shape.owner, members: shape.members, createdAt: f.createdAt, needsRekey: true });
    assert.ok(keys.length > 0, `${n} keeps its wrapped keys`);
  }
}

/** A deleted room leaves nothing behind: its id and its key ids are free for a new room. */
async function assertGone(store: Store, roomId: string, creator: string): Promise<void> {
  if (!(await store.getAccount(creator))) await store.registerAccount(account(creator));
  const keyId = id16();
  const again = await store.createRoom({ id: roomId, name: 'again', owner: creator, keyId, keys: [wrapped(creator)], now: NOW + 1 });
  assert.ok('room' in again, `the room id is free again: ${JSON.stringify(again)}`);
  assert.deepEqual(again.room.members, [creator]);
  assert.equal(again.room.needsRekey, false);
  const listed = (await store.listRooms(creator)).find((r) => r.id === roomId);
  assert.deepEqual(
    listed?.keys.map((k) => k.keyId),
    [keyId],
    'no key of the old room is left',
  );
}

export function roomLeaveSuite(name: string, factory: StoreFactory): void {
  describe(`store: ${name}, leaving rooms and deleting accounts`, () => {
    let store: Store;
    beforeEach(async () => {
      store = await factory.make();
    });
    afterEach(async () => {
      await factory.destroy(store);
    });

    test('an owner who deletes the account passes the room to the earliest-joined member, not the first by name', async () => {
      const f = await roomOf(store, ['olga', 'zed', 'amy', 'bea']);
      const r = await store.deleteAccount('olga', NOW);
      assert.deepEqual(r.devices, devicesOf('olga'));
      assert.deepEqual(
        r.rooms.map((l) => l.roomId),
        [f.roomId],
      );
      const end = assertChain(f, [{ nick: 'olga', r: leaveIn(r, f.roomId) }]);
      assert.deepEqual(end, { owner: 'zed', members: ['zed', 'amy', 'bea'] });
      await assertStored(store, f, end, ['olga', 'zed', 'amy', 'bea']);
      // The new owner has the owner's rights, and the rotation it owes clears needsRekey.
      const rot = await store.changeMembers({
        roomId: f.roomId,
        caller: 'zed',
        add: [],
        remove: [],
        keyId: id16(),
        keys: end.members.map(wrapped),
        now: NOW,
      });
      assert.ok('room' in rot && rot.room.needsRekey === false && rot.room.owner === 'zed');
      assert.deepEqual(
        await store.changeMembers({ roomId: f.roomId, caller: 'amy', add: [], remove: [], keyId: id16(), keys: end.members.map(wrapped), now: NOW }),
        {
          error: 'not_owner',
        },
      );
    });

    test('a member who is not the owner deletes the account: the owner stays, the others owe a rekey', async () => {
      const f = await roomOf(store, ['olga', 'zed', 'amy']);
      const r = await store.deleteAccount('zed', NOW);
      const end = assertChain(f, [{ nick: 'zed', r: leaveIn(r, f.roomId) }]);
      assert.deepEqual(end, { owner: 'olga', members: ['olga', 'amy'] });
      await assertStored(store, f, end, ['olga', 'zed', 'amy']);
    });

    test('an owner alone in the room deletes the account: the room is deleted with its keys', async () => {
      const f = await roomOf(store, ['olga']);
      const shared = await roomOf(store, ['olga', 'amy']);
      const r = await store.deleteAccount('olga', NOW);
      assert.deepEqual(
        r.rooms.map((l) => l.roomId),
        [f.roomId, shared.roomId],
        'rooms are left in join order',
      );
      assert.equal(assertChain(f, [{ nick: 'olga', r: leaveIn(r, f.roomId) }]), null);
      assert.deepEqual(assertChain(shared, [{ nick: 'olga', r: leaveIn(r, shared.roomId) }]), { owner: 'amy', members: ['amy'] });
      assert.equal((await store.stats()).rooms, 1);
      await assertGone(store, f.roomId, 'amy');
    });

    test('an owner deleting the account while a member leaves: the room ends as one order or the other leaves it', async () => {
      for (let round = 0; round < 4; round++) {
        const nicks = ['olga', 'zed', 'amy', 'bea'].map((n) => `${n}${round}`);
        const f = await roomOf(store, nicks);
        const [del, left] = await Promise.all([store.deleteAccount(nicks[0]!, NOW), store.leaveRoom(f.roomId, nicks[1]!)]);
        const end = assertChain(f, [
          { nick: nicks[0]!, r: leaveIn(del, f.roomId) },
          { nick: nicks[1]!, r: left },
        ]);
        assert.deepEqual(end, { owner: nicks[2], members: nicks.slice(2) });
        await assertStored(store, f, end, nicks);
      }
    });

    test('the owner and the next in line deleting their accounts at once: the third member owns the room', async () => {
      for (let round = 0; round < 4; round++) {
        const nicks = ['olga', 'zed', 'amy', 'bea'].map((n) => `${n}${round}`);
        const f = await roomOf(store, nicks);
        const rs = await Promise.all([store.deleteAccount(nicks[0]!, NOW), store.deleteAccount(nicks[1]!, NOW)]);
        const end = assertChain(f, [
          { nick: nicks[0]!, r: leaveIn(rs[0], f.roomId) },
          { nick: nicks[1]!, r: leaveIn(rs[1], f.roomId) },
        ]);
        assert.deepEqual(end, { owner: nicks[2], members: nicks.slice(2) });
        await assertStored(store, f, end, nicks);
      }
    });

    test('many members deleting their accounts at once: one chain of leaves, the survivors keep the room', async () => {
      const nicks = Array.from({ length: 10 }, (_, i) => `m${String.fromCharCode(122 - i)}`); // join order is reverse name order
      const f = await roomOf(store, nicks);
      const leaving = [nicks[0]!, nicks[1]!, nicks[2]!, nicks[4]!, nicks[5]!, nicks[7]!, nicks[9]!];
      const rs = await Promise.all(leaving.map((n) => store.deleteAccount(n, NOW)));
      const end = assertChain(
        f,
        leaving.map((n, i) => ({ nick: n, r: leaveIn(rs[i]!, f.roomId) })),
      );
      assert.deepEqual(end, { owner: nicks[3], members: [nicks[3]!, nicks[6]!, nicks[8]!] });
      await assertStored(store, f, end, nicks);
    });

    test('every member deleting the account at once: the room is deleted exactly once', async () => {
      const nicks = ['olga', 'zed', 'amy', 'bea', 'cid', 'dan'];
      const f = await roomOf(store, nicks);
      const rs = await Promise.all(nicks.map((n) => store.deleteAccount(n, NOW)));
      const leaves = nicks.map((n, i) => ({ nick: n, r: leaveIn(rs[i]!, f.roomId) }));
      assert.equal(leaves.filter((l) => l.r.deleted).length, 1);
      assert.equal(assertChain(f, leaves), null);
      assert.equal((await store.stats()).rooms, 0);
      await assertGone(store, f.roomId, 'eve');
    });

    test('members of two rooms, joined in opposite orders, deleting their accounts at once: every deletion completes', async () => {
      for (let round = 0; round < 4; round++) {
        const [a, b, c] = ['ann', 'ben', 'cat'].map((n) => `${n}${round}`) as [string, string, string];
        // a joins r1 before r2, b joins r2 before r1: each deletion meets the rooms in the other's order.
        const r1 = await roomOf(store, [a]);
        const r2 = await roomOf(store, [b]);
        for (const [f, n] of [
          [r1, b],
          [r2, a],
          [r1, c],
          [r2, c],
        ] as const)
          await join(store, f, n);
        const rs = await Promise.all([store.deleteAccount(a, NOW), store.deleteAccount(b, NOW)]);
        for (const f of [r1, r2]) {
          const end = assertChain(f, [
            { nick: a, r: leaveIn(rs[0], f.roomId) },
            { nick: b, r: leaveIn(rs[1], f.roomId) },
          ]);
          assert.deepEqual(end, { owner: c, members: [c] });
          await assertStored(store, f, end, [a, b, c]);
        }
      }
    });

    test('a leave by a non-member or of a room that does not exist changes nothing and says so', async () => {
      const f = await roomOf(store, ['olga', 'zed']);
      await store.registerAccount(account('out'));
      for (const d of devicesOf('out')) await store.addDevice('out', d, NOW);
      assert.deepEqual(await store.leaveRoom(f.roomId, 'out'), {
        roomId: f.roomId,
        left: false,
        deleted: false,
        callerDevices: devicesOf('out'),
        fanout: null,
      });
      const missing = id16();
      assert.deepEqual(await store.leaveRoom(missing, 'olga'), {
        roomId: missing,
        left: false,
        deleted: false,
        callerDevices: devicesOf('olga'),
        fanout: null,
      });
      const { keys: _keys, ...room } = (await store.listRooms('zed'))[0]!;
      assert.deepEqual(room, { id: f.roomId, name: f.name, owner: 'olga', members: ['olga', 'zed'], createdAt: NOW, needsRekey: false });
    });
  });
}
