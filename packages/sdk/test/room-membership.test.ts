/**
 * The membership record against a hostile service, over a real server whose database the test
 * changes behind the clients' backs (as an operator, or anyone holding the database, could):
 * a member nobody added gets no room key and the clients warn about it; announcements from anyone
 * but the owner, relabelled or replayed ones change nothing; ownership passes as the interface
 * says when the owner leaves, with or without its announcement; the record survives a reload.
 * Each device runs as an app runs it: Conversations over a store, fed by the event stream.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore, newMid, type PlainInput } from '../src/index.js';
import { register, reload, sleep, startServer, type Device, type TestServer } from './server.js';
import {
  keyHolders as keyHoldersOf,
  keyRows as keyRowsOf,
  membersCalls,
  recorded,
  roomOf,
  run as runApp,
  status,
  tamper as tamperWith,
  until,
} from './room-apps.js';
import type { FetchLike } from '../src/cookies.js';

let server: TestServer;
before(async () => {
  // SQLite whatever the run's mode: the test writes to the server's database itself.
  server = await startServer({}, {}, 'sqlite');
});
after(async () => {
  await server.close();
});

/** What a hostile service does to its own database: the clients only see the result. */
const tamper = (sql: string, ...args: unknown[]) => tamperWith(server, sql, ...args);
const keyHolders = (roomId: string, keyId: string) => keyHoldersOf(server, roomId, keyId);
const keyRows = (roomId: string, member: string) => keyRowsOf(server, roomId, member);
/** As an app runs it, asking the account's other devices for a missing record after the app's own delay. */
const run = (d: Device, store = new MemoryStore()) => runApp(d, store, {});

test('a member the server adds on its own gets no room key: the owner refuses to rotate or add, every client warns, and removing it is the way on', async () => {
  const [alice, bob, eve, carol] = await Promise.all([register(server), register(server), register(server), register(server)]);
  const [A, B] = [await run(alice), await run(bob)];
  try {
    const id = await roomOf(A, [B]);
    assert.deepEqual(status(A, id).warned, []);

    // The service puts eve in the room and asks for a key rotation, with no announcement at all.
    await tamper('INSERT INTO room_members (room_id, nick) VALUES (?, ?)', id, eve.m.nick);
    await tamper('UPDATE rooms SET needs_rekey = 1 WHERE id = ?', id);
    await alice.m.syncRooms();
    assert.equal(alice.m.room(id)?.needsRekey, true);
    assert.deepEqual(alice.m.room(id)?.members, [alice.m.nick, bob.m.nick, eve.m.nick], 'the service lists eve');
    assert.deepEqual(status(A, id).warned, [eve.m.nick], "the owner's client warns about eve");
    assert.deepEqual(status(A, id).members, [alice.m.nick, bob.m.nick], 'the record is unchanged');

    const calls = membersCalls(alice, id).length;
    await assert.rejects(
      alice.m.rotateRoomKey(id),
      (e: { code?: string; message?: string }) =>
        e.code === 'unannounced_member' && /nobody added/.test(e.message ?? '') && (e.message ?? '').includes(eve.m.nick),
    );
    await assert.rejects(alice.m.changeMembers(id, { add: [carol.m.nick] }), { code: 'unannounced_member' });
    assert.equal(membersCalls(alice, id).length, calls, 'no key was made, so nothing was sent');
    assert.equal(await keyRows(id, eve.m.nick), 0, 'the service holds no room key for eve');
    await eve.m.syncRooms();
    assert.deepEqual(eve.m.room(id)?.keys, [], 'eve is listed, and holds no key');

    // Bob, a member, sees the same warning from his own record.
    await bob.m.syncRooms();
    assert.deepEqual(status(B, id).warned, [eve.m.nick]);

    // The owner removes eve: the new key is for the recorded members alone, and the warnings end.
    await alice.m.changeMembers(id, { remove: [eve.m.nick] });
    const keyId = alice.m.roomKeyId(id)!;
    assert.deepEqual(await keyHolders(id, keyId), [alice.m.nick, bob.m.nick].sort());
    assert.deepEqual(status(A, id).warned, []);
    await until(() => status(B, id).warned.length === 0 && bob.m.room(id)?.members.length === 2, "bob's warning to end");
    assert.deepEqual(status(B, id).members, [alice.m.nick, bob.m.nick]);
    // The announcement of the change went under the change's own key, which the removed member lacks.
    await until(() => B.envs.some((e) => e.from === alice.m.nick && e.keyId === keyId), 'the announcement under the new key');
    assert.deepEqual(
      new Set(B.envs.filter((e) => e.from === alice.m.nick).map((e) => e.keyId)).size,
      2,
      'one announcement per change, each under its own key',
    );
  } finally {
    await Promise.all([A.close(), B.close()]);
  }
});

test('the owner who adds a listed but unannounced member on purpose wraps for it and announces it', async () => {
  const [alice, bob, dave] = await Promise.all([register(server), register(server), register(server)]);
  const [A, B] = [await run(alice), await run(bob)];
  try {
    const id = await roomOf(A, [B]);
    await tamper('INSERT INTO room_members (room_id, nick) VALUES (?, ?)', id, dave.m.nick);
    await alice.m.syncRooms();
    assert.deepEqual(status(A, id).unannounced, [dave.m.nick]);
    await alice.m.changeMembers(id, { add: [dave.m.nick] });
    assert.deepEqual(await keyHolders(id, alice.m.roomKeyId(id)!), [alice.m.nick, bob.m.nick, dave.m.nick].sort());
    await until(recorded(B, id, alice.m.nick, [alice.m.nick, bob.m.nick, dave.m.nick]), 'bob to record dave');
    await bob.m.syncRooms();
    assert.deepEqual(status(B, id).warned, []);
  } finally {
    await Promise.all([A.close(), B.close()]);
  }
});

test('announcements from a member who is not the owner, relabelled by the service, or replayed change nothing', async () => {
  const [alice, bob, carol, eve, dave] = await Promise.all([
    register(server),
    register(server),
    register(server),
    register(server),
    register(server),
  ]);
  const [A, B, C] = [await run(alice), await run(bob), await run(carol)];
  try {
    const id = await roomOf(A, [B, C]);
    const three = [alice.m.nick, bob.m.nick, carol.m.nick];
    const firstAnnouncement = C.envs.find((e) => e.from === alice.m.nick)!;
    assert.ok(firstAnnouncement, 'carol got the announcement that added her');
    await tamper('INSERT INTO room_members (room_id, nick) VALUES (?, ?)', id, eve.m.nick);

    // Bob, a member, announces eve as added: once naming himself owner, once naming alice.
    const forged = (owner: string): PlainInput => ({
      type: 'members',
      room: id,
      owner,
      members: [...three, eve.m.nick],
      added: [eve.m.nick],
      removed: [],
      sentAt: 0,
      mid: newMid(),
    });
    const f1 = await bob.m.send(`room:${id}`, forged(bob.m.nick));
    const f2 = await bob.m.send(`room:${id}`, forged(alice.m.nick));
    await until(() => C.envs.some((e) => e.id === f2.id) && C.envs.some((e) => e.id === f1.id), 'carol to receive both');
    await carol.m.syncRooms();
    assert.ok(recorded(C, id, alice.m.nick, three)(), 'carol keeps the owner and the members');
    assert.deepEqual(status(C, id).warned, [eve.m.nick]);

    // The service relabels bob's announcement as alice's: it no longer opens.
    const relabelled = { ...C.envs.find((e) => e.id === f2.id)!, from: alice.m.nick };
    const r = await C.conv.receive(relabelled);
    assert.equal(r.added?.kind, 'undecryptable');
    assert.ok(recorded(C, id, alice.m.nick, three)());

    // Alice adds dave; then the service replays her first announcement (without dave).
    await alice.m.changeMembers(id, { add: [dave.m.nick], remove: [eve.m.nick] });
    const four = [...three, dave.m.nick];
    await until(recorded(C, id, alice.m.nick, four), 'carol to record dave');
    const replay = await C.conv.receive(firstAnnouncement);
    assert.equal(replay.ignored, 'membership announcement refused');
    assert.ok(recorded(C, id, alice.m.nick, four)(), 'the replay changed nothing');
  } finally {
    await Promise.all([A.close(), B.close(), C.close()]);
  }
});

test('when the owner leaves, ownership passes to the earliest member: the records follow and the new owner rotates for the recorded members', async () => {
  const [alice, bob, carol, dave] = await Promise.all([register(server), register(server), register(server), register(server)]);
  const [A, B, C] = [await run(alice), await run(bob), await run(carol)];
  try {
    const id = await roomOf(A, [B, C]);
    await alice.m.leaveRoom(id);
    for (const x of [B, C]) await until(recorded(x, id, bob.m.nick, [bob.m.nick, carol.m.nick]), `${x.nick} to follow the leave`);
    await bob.m.syncRooms();
    assert.equal(bob.m.room(id)?.needsRekey, true);
    assert.equal(B.conv.membership.isOwner(id), true);
    assert.equal(C.conv.membership.isOwner(id), false);

    await bob.m.rotateRoomKey(id);
    assert.deepEqual(await keyHolders(id, bob.m.roomKeyId(id)!), [bob.m.nick, carol.m.nick].sort());
    // Carol takes the new owner's announcements now.
    await bob.m.changeMembers(id, { add: [dave.m.nick] });
    await until(recorded(C, id, bob.m.nick, [bob.m.nick, carol.m.nick, dave.m.nick]), 'carol to take the new owner’s announcement');
  } finally {
    await Promise.all([A.close(), B.close(), C.close()]);
  }
});

test('an owner whose account is deleted announces nothing: the records follow the service only to the member the ownership rule names', async () => {
  const [alice, bob, carol] = await Promise.all([register(server), register(server), register(server)]);
  const [A, B, C] = [await run(alice), await run(bob), await run(carol)];
  try {
    const id = await roomOf(A, [B, C]);
    await A.close();
    await alice.m.deleteAccount(alice.password);
    for (const x of [B, C]) {
      await x.d.m.syncRooms();
      await until(recorded(x, id, bob.m.nick, [bob.m.nick, carol.m.nick]), `${x.nick} to follow the owner's departure`);
    }
    await bob.m.rotateRoomKey(id);
    assert.deepEqual(await keyHolders(id, bob.m.roomKeyId(id)!), [bob.m.nick, carol.m.nick].sort());

    // The service hands the room to carol, though bob is still a member: nobody follows.
    await tamper('UPDATE rooms SET owner = ? WHERE id = ?', carol.m.nick, id);
    await carol.m.syncRooms();
    assert.equal(status(C, id).ownerDisputed, true);
    assert.equal(status(C, id).owner, bob.m.nick);
    assert.equal(C.conv.membership.isOwner(id), false);
    const calls = membersCalls(carol, id).length;
    await assert.rejects(carol.m.rotateRoomKey(id), { code: 'not_owner' });
    assert.equal(membersCalls(carol, id).length, calls, 'carol made no key on the service’s word');
  } finally {
    await Promise.all([B.close(), C.close()]);
  }
});

test('a device without a record makes no key whoever the server names as owner, its owner’s device included, until the owner names every listed member', async () => {
  const [alice, bob, carol, eve] = await Promise.all([register(server), register(server), register(server), register(server)]);
  // A room made without the record (a bare Messenger, as before it existed): nobody announced anything.
  const room = await alice.m.createRoom('Old', [bob.m.nick, carol.m.nick]);
  const [A, C] = [await run(alice), await run(carol)];
  try {
    await alice.m.syncRooms();
    assert.equal(status(A, room.id).recorded, false, "the owner's device does not take the service's list");
    assert.equal(A.conv.membership.isOwner(room.id), false);
    await carol.m.syncRooms();
    assert.equal(status(C, room.id).recorded, false, 'a member waits for an announcement');

    // The service hands the room to carol, lists eve and asks for a rotation.
    await tamper('UPDATE rooms SET owner = ?, needs_rekey = 1 WHERE id = ?', carol.m.nick, room.id);
    await tamper('INSERT INTO room_members (room_id, nick) VALUES (?, ?)', room.id, eve.m.nick);
    await carol.m.syncRooms();
    assert.equal(C.conv.membership.isOwner(room.id), false);
    const calls = membersCalls(carol, room.id).length;
    await assert.rejects(carol.m.rotateRoomKey(room.id), { code: 'no_membership_record' });
    assert.equal(membersCalls(carol, room.id).length, calls, 'carol made no key on the service’s word');
    assert.equal(await keyRows(room.id, eve.m.nick), 0);

    // The service gives the room back to alice: her device makes no key on the list either...
    await tamper('UPDATE rooms SET owner = ? WHERE id = ?', alice.m.nick, room.id);
    await alice.m.syncRooms();
    const own = membersCalls(alice, room.id).length;
    await assert.rejects(alice.m.rotateRoomKey(room.id), { code: 'no_membership_record' });
    await assert.rejects(alice.m.changeMembers(room.id, { add: [bob.m.nick] }), { code: 'no_membership_record' });
    assert.equal(membersCalls(alice, room.id).length, own);
    // ...until she decides about everyone it lists: that starts her record, and announces it.
    await alice.m.changeMembers(room.id, { add: [bob.m.nick, carol.m.nick], remove: [eve.m.nick] });
    assert.deepEqual(await keyHolders(room.id, alice.m.roomKeyId(room.id)!), [alice.m.nick, bob.m.nick, carol.m.nick].sort());
    assert.ok(recorded(A, room.id, alice.m.nick, [alice.m.nick, bob.m.nick, carol.m.nick])());
    await until(recorded(C, room.id, alice.m.nick, [alice.m.nick, bob.m.nick, carol.m.nick]), 'carol to take the announcement');
  } finally {
    await Promise.all([A.close(), C.close()]);
  }
});

test('the record survives a reload, and the reloaded device still refuses a member nobody added', async () => {
  const [alice, bob, eve] = await Promise.all([register(server), register(server), register(server)]);
  const [A, B] = [await run(alice), await run(bob)];
  const store = A.store;
  try {
    const id = await roomOf(A, [B]);
    const before = await A.conv.membership.record(id);
    await A.close();

    await tamper('INSERT INTO room_members (room_id, nick) VALUES (?, ?)', id, eve.m.nick);
    await tamper('UPDATE rooms SET needs_rekey = 1 WHERE id = ?', id);
    const again = await reload(server, alice, alice.m.exportSession());
    const A2 = await run(again, store);
    try {
      assert.deepEqual(await A2.conv.membership.record(id), before, 'the same record after the reload');
      await again.m.syncRooms();
      assert.deepEqual(status(A2, id).warned, [eve.m.nick]);
      await assert.rejects(again.m.rotateRoomKey(id), { code: 'unannounced_member' });
      assert.equal(await keyRows(id, eve.m.nick), 0);
    } finally {
      await A2.close();
    }
  } finally {
    await B.close();
  }
});

test('a member who leaves sends nothing to the room after its leave: a receipt on its way goes first, none is refused not_member', async () => {
  // Bob's sends can be held on their way to the service, so that his receipt is still on its way
  // when he leaves (as on a slow network); every answer he gets is kept.
  let hold: { released: Promise<void>; held: () => void } | null = null;
  const answers: string[] = [];
  const wrap =
    (f: FetchLike): FetchLike =>
    async (url, init) => {
      const what = `${init?.method ?? 'GET'} ${new URL(url).pathname}`;
      const h = what === 'POST /api/messages' ? hold : null;
      if (h) {
        hold = null;
        h.held();
        await h.released;
      }
      const res = await f(url, init);
      answers.push(`${what} ${res.status}`);
      return res;
    };
  const [alice, bob] = await Promise.all([register(server), register(server, undefined, undefined, { wrap })]);
  const [A, B] = [await run(alice), await run(bob)];
  try {
    const id = await roomOf(A, [B]);
    let release!: () => void;
    const onItsWay = new Promise<void>((held) => (hold = { released: new Promise<void>((r) => (release = r)), held }));
    await A.conv.sendText(`room:${id}`, 'see you');
    // Bob's client takes the text and sends its delivered receipt after RECEIPT_DELAY_MS: held.
    await onItsWay;
    const leaving = bob.m.leaveRoom(id);
    await sleep(300);
    release();
    await leaving;
    await sleep(300);
    assert.deepEqual(
      answers.filter((a) => a.startsWith('POST /api/messages') && !a.endsWith(' 202')),
      [],
      'no send refused',
    );
    const leave = bob.requests.indexOf(`POST /api/rooms/${id}/leave`);
    assert.ok(leave >= 0);
    assert.deepEqual(
      bob.requests.slice(leave + 1).filter((r) => r === 'POST /api/messages'),
      [],
      'no send after the leave',
    );
    // Alice is told of the leave all the same: its announcement goes before the leave.
    await until(recorded(A, id, alice.m.nick, [alice.m.nick]), 'alice to follow the leave');
  } finally {
    await Promise.all([A.close(), B.close()]);
  }
});
