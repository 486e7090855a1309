/** Room flows between SDK accounts on a real server: create, add, remove, rotate, leave, delete, each with key unwrap. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { DecryptedMessage } from '../src/index.js';
import { Inbox, register, startServer, type TestServer } from './server.js';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

const body = (r: DecryptedMessage): string => (r.ok ? (r.body ?? `!${r.plain.type}`) : `!${r.reason}`);

test('room create with members, messages under the room key, removal and rotation give new keys, old messages still decrypt', async () => {
  const [alice, bob, carol] = [await register(server), await register(server), await register(server)];
  const bobIn = new Inbox(bob).start();
  const carolIn = new Inbox(carol).start();
  try {
    await Promise.all([bobIn.ready(), carolIn.ready()]);
    const room = await alice.m.createRoom('Plans ✓', [bob.m.nick, carol.m.nick]);
    assert.deepEqual([...room.members].sort(), [alice.m.nick, bob.m.nick, carol.m.nick].sort());
    // Creation key, then the key of the membership change.
    assert.equal(alice.m.keyring.keyIds(room.id).length, 2);
    // Bob and Carol learn the room from the `room` event (the keyring is filled before onRoom).
    await bobIn.until(() => bob.m.keyring.keyIds(room.id).length === 1, 'bob room key');
    await carolIn.until(() => carol.m.keyring.keyIds(room.id).length === 1, 'carol room key');

    const first = await alice.m.sendRoom(room.id, 'first');
    await Promise.all([bobIn.count(1), carolIn.count(1)]);
    assert.equal(body(await bob.m.decryptEnvelope(bobIn.envelopes[0]!)), 'first');
    const c1 = await carol.m.decryptEnvelope(carolIn.envelopes[0]!);
    assert.deepEqual([body(c1), c1.from, c1.chat, c1.id], ['first', alice.m.nick, `room:${room.id}`, first.id]);

    // Bob replies with the newest key he holds (his own device gets no copy of it).
    await bob.m.sendRoom(room.id, 'reply');
    await carolIn.count(2);
    assert.equal(body(await carol.m.decryptEnvelope(carolIn.envelopes[1]!)), 'reply');

    // Carol is removed: a new key for alice and bob only.
    const after1 = await alice.m.changeMembers(room.id, { remove: [carol.m.nick] });
    assert.deepEqual([...after1.members].sort(), [alice.m.nick, bob.m.nick].sort());
    await bobIn.until(() => bob.m.keyring.keyIds(room.id).length === 2, 'bob second key');
    await alice.m.sendRoom(room.id, 'secret after carol');
    await bobIn.count(2);
    const newest = bobIn.envelopes[1]!;
    assert.equal(body(await bob.m.decryptEnvelope(newest)), 'secret after carol');
    // Carol never got the new key: the envelope (had she got it) does not open for her.
    assert.equal(body(await carol.m.decryptEnvelope(newest)), '!no_room_key');
    await carolIn.until(() => carol.m.room(room.id) === undefined, 'carol room_left');
    // Bob still reads the message under the first key.
    assert.equal(body(await bob.m.decryptEnvelope(bobIn.envelopes[0]!)), 'first');

    // Pure rotation: same members, one more key, messages use it.
    const before = alice.m.roomKeyId(room.id);
    assert.ok(before);
    await alice.m.rotateRoomKey(room.id);
    const rotated = alice.m.roomKeyId(room.id);
    assert.notEqual(rotated, before);
    await alice.m.sendRoom(room.id, 'rotated');
    await bobIn.count(3);
    assert.equal(bobIn.envelopes[2]!.keyId, rotated);
    assert.equal(body(await bob.m.decryptEnvelope(bobIn.envelopes[2]!)), 'rotated');
  } finally {
    await Promise.all([bobIn.close(), carolIn.close()]);
  }
});

test("a member who leaves sets needsRekey; the owner's rotation clears it; a key missed while offline comes from GET /api/rooms", async () => {
  const [alice, bob, carol] = [await register(server), await register(server), await register(server)];
  const room = await alice.m.createRoom('Leavers', [bob.m.nick, carol.m.nick]);
  await bob.m.syncRooms();
  await bob.m.leaveRoom(room.id);
  assert.equal(bob.m.room(room.id), undefined);
  await alice.m.syncRooms();
  assert.equal(alice.m.room(room.id)?.needsRekey, true);
  const r = await alice.m.rotateRoomKey(room.id);
  assert.equal(r.needsRekey, false);
  assert.deepEqual([...r.members].sort(), [alice.m.nick, carol.m.nick].sort());
  // Carol had no stream: the message's key is fetched from GET /api/rooms when she decrypts.
  await alice.m.sendRoom(room.id, 'after bob left');
  const carolIn = new Inbox(carol).start();
  try {
    await carolIn.count(1);
    assert.equal(body(await carol.m.decryptEnvelope(carolIn.envelopes[0]!)), 'after bob left');
  } finally {
    await carolIn.close();
  }
  // Bob keeps the old keys (stored envelopes still open) but the service no longer takes his messages.
  await assert.rejects(bob.m.sendRoom(room.id, 'x'), { code: 'not_member' });
});

test('only the owner deletes a room; members get room_left and the room leaves their list', async () => {
  const [alice, bob] = [await register(server), await register(server)];
  const room = await alice.m.createRoom('Short-lived', [bob.m.nick]);
  const bobIn = new Inbox(bob).start();
  try {
    await bobIn.ready();
    assert.ok(bob.m.room(room.id));
    await assert.rejects(bob.m.deleteRoom(room.id), { code: 'not_owner' });
    await alice.m.deleteRoom(room.id);
    await bobIn.until(() => bob.m.room(room.id) === undefined, 'room_left');
    assert.equal((await bob.m.syncRooms()).length, 0);
  } finally {
    await bobIn.close();
  }
});
