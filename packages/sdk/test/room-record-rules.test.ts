/**
 * What the membership screens show comes from the record, not the service's list, over a real
 * server whose database the test rewrites: a departure the service fakes drops nobody from the
 * record and is warned about; a member who announces a leave without leaving blocks no rotation;
 * the service reordering its list does not pick the next owner.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { newMid } from '../src/index.js';
import { register, startServer, type TestServer } from './server.js';
import { keyHolders, membersCalls, recorded, roomOf, run, status, tamper, until } from './room-apps.js';

let server: TestServer;
before(async () => {
  server = await startServer({}, {}, 'sqlite');
});
after(async () => {
  await server.close();
});

test('a recorded member the service stops listing stays in the record and is warned about, until an announcement drops it', async () => {
  const [alice, bob, eve] = await Promise.all([register(server), register(server), register(server)]);
  const [A, B] = [await run(alice), await run(bob)];
  try {
    const id = await roomOf(A, [B]);
    await alice.m.changeMembers(id, { add: [eve.m.nick] });
    const three = [alice.m.nick, bob.m.nick, eve.m.nick];
    await until(recorded(B, id, alice.m.nick, three), 'bob to record eve');

    // The service hides eve from the list, as if she had left; nobody announced that.
    await tamper(server, 'DELETE FROM room_members WHERE room_id = ? AND nick = ?', id, eve.m.nick);
    await bob.m.syncRooms();
    assert.deepEqual(status(B, id).members, three, 'the member list is the record');
    assert.deepEqual(status(B, id).gone, [eve.m.nick]);
    assert.deepEqual(status(B, id).goneWarned, [eve.m.nick], 'warned about');

    // The owner's next announcement drops her: the warning ends.
    await alice.m.syncRooms();
    await alice.m.rotateRoomKey(id);
    await until(recorded(B, id, alice.m.nick, [alice.m.nick, bob.m.nick]), 'bob to take the announcement');
    assert.deepEqual(status(B, id).goneWarned, []);
  } finally {
    await Promise.all([A.close(), B.close()]);
  }
});

test('a member who announces its leaving without leaving stays a member: it blocks no rotation, and goes once the service drops it', async () => {
  const [alice, bob, carol] = await Promise.all([register(server), register(server), register(server)]);
  const [A, C] = [await run(alice), await run(carol)];
  const B = await run(bob);
  try {
    const id = await roomOf(A, [B, C]);
    const three = [alice.m.nick, bob.m.nick, carol.m.nick];
    // Bob's client announces his leave, and he stays.
    const leave = await bob.m.send(`room:${id}`, {
      type: 'members',
      room: id,
      owner: alice.m.nick,
      members: [alice.m.nick, carol.m.nick],
      added: [],
      removed: [bob.m.nick],
      sentAt: 0,
      mid: newMid(),
    });
    await until(() => A.envs.some((e) => e.id === leave.id) && C.envs.some((e) => e.id === leave.id), 'the announcement to arrive');
    await until(() => status(A, id).leaving.includes(bob.m.nick), 'alice to hold the leave as pending');
    assert.deepEqual(status(A, id).members, three, 'bob is still a member');
    assert.deepEqual(status(A, id).unannounced, []);
    const calls = membersCalls(alice, id).length;
    await alice.m.rotateRoomKey(id);
    assert.equal(membersCalls(alice, id).length, calls + 1, 'the rotation went');
    assert.deepEqual(await keyHolders(server, id, alice.m.roomKeyId(id)!), [...three].sort());

    // Bob does leave: the service drops him, and the records follow.
    await B.close();
    await bob.m.leaveRoom(id);
    for (const x of [A, C]) {
      await x.d.m.syncRooms();
      await until(recorded(x, id, alice.m.nick, [alice.m.nick, carol.m.nick]), `${x.nick} to drop bob`);
    }
  } finally {
    await Promise.all([A.close(), C.close()]);
  }
});

test('the next owner is the earliest-joined member as announced: a service that reorders its list is not followed', async () => {
  const [alice, bob, carol] = await Promise.all([register(server), register(server), register(server)]);
  const [A, B, C] = [await run(alice), await run(bob), await run(carol)];
  try {
    const id = await roomOf(A, [B, C]);
    // The service moves bob behind carol in its join order, then the owner rotates and leaves.
    await tamper(server, 'UPDATE room_members SET seq = seq + 100000 WHERE room_id = ? AND nick = ?', id, bob.m.nick);
    await alice.m.syncRooms();
    assert.deepEqual(alice.m.room(id)?.members, [alice.m.nick, carol.m.nick, bob.m.nick]);
    await alice.m.rotateRoomKey(id);
    await alice.m.leaveRoom(id);
    for (const x of [B, C]) {
      await x.d.m.syncRooms();
      await until(recorded(x, id, bob.m.nick, [bob.m.nick, carol.m.nick]), `${x.nick} to name bob owner`);
      assert.equal(status(x, id).ownerDisputed, true, 'the service named carol');
    }
    assert.equal(C.conv.membership.isOwner(id), false, 'carol makes no key on the service’s word');
    await assert.rejects(carol.m.rotateRoomKey(id), { code: 'not_owner' });
  } finally {
    await Promise.all([A.close(), B.close(), C.close()]);
  }
});
