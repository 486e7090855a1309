/**
 * A silent room reader that a hostile service tries to add through a device without a membership
 * record, over a real server whose database the test rewrites behind the clients: bob created the
 * room, left (carol owns it now) and was added back; the service keeps his old self-wrapped keys,
 * names bob owner, lists eve and asks for a rotation. No device of bob's or carol's makes a key for
 * eve, carol's messages wait while the room is not what her record says, and a new device gets
 * its records from the account's own devices, never from the service's list.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { K_RECORD_ASKS, newMid } from '../src/index.js';
import { loginDevice, register, sleep, startServer, type Device, type TestServer } from './server.js';
import { keyHolders, keyRows, membersCalls, recorded, roomOf as makeRoom, run, status, tamper, until, type App } from './room-apps.js';
import type { Envelope } from '@svc/protocol';

let server: TestServer;
before(async () => {
  // SQLite whatever the run's mode: the test writes to the server's database itself.
  server = await startServer({}, {}, 'sqlite');
});
after(async () => {
  await server.close();
});

interface Scene {
  id: string;
  bob: Device & { password: string };
  carol: Device & { password: string };
  eve: Device & { password: string };
  /** The first devices of bob and carol, as apps (closed: each test opens what it needs). */
  B: App;
  C: App;
}

/**
 * Bob creates the room with carol and leaves it; carol, its owner now, rotates and adds bob back.
 * Then the service keeps bob's old self-wrapped keys, names `owner` as owner, lists eve and asks
 * for a rotation.
 */
async function rejoined(owner: 'bob' | 'carol'): Promise<Scene> {
  const [bob, carol, eve] = await Promise.all([register(server), register(server), register(server)]);
  const [B, C] = [await run(bob), await run(carol)];
  const [b, c] = [bob.m.nick, carol.m.nick];
  const id = await makeRoom(B, [C]);
  const kept = await server.query(`SELECT seq, key_id, from_nick, iv, ct FROM room_keys WHERE room_id = '${id}' AND member = '${b}'`);
  assert.ok(kept.length > 0 && kept.every((k) => k.from_nick === b), 'bob wrapped his own keys');
  await bob.m.leaveRoom(id);
  await until(recorded(C, id, c, [c]), 'carol to own the room');
  await carol.m.syncRooms();
  await carol.m.rotateRoomKey(id);
  await carol.m.changeMembers(id, { add: [b] });
  await until(recorded(C, id, c, [c, b]), "carol's record of bob's return");
  await until(recorded(B, id, c, [c, b]), "bob's record of his return");

  for (const k of kept)
    await tamper(
      server,
      'INSERT INTO room_keys (seq, room_id, member, key_id, from_nick, iv, ct) VALUES (?, ?, ?, ?, ?, ?, ?)',
      k.seq,
      id,
      b,
      k.key_id,
      k.from_nick,
      k.iv,
      k.ct,
    );
  await tamper(server, 'UPDATE rooms SET owner = ?, needs_rekey = 1 WHERE id = ?', owner === 'bob' ? b : c, id);
  await tamper(server, 'INSERT INTO room_members (room_id, nick) VALUES (?, ?)', id, eve.m.nick);
  await Promise.all([B.close(), C.close()]);
  return { id, bob, carol, eve, B, C };
}

/** As the app does for a room that owes a rotation: the device that counts as owner rotates. */
async function rotateIfOwner(a: App, id: string): Promise<void> {
  await a.d.m.syncRooms();
  if (a.d.m.room(id)?.needsRekey && a.conv.membership.isOwner(id)) await a.d.m.rotateRoomKey(id).catch(() => undefined);
}

const roomOf = (e: Envelope): string | undefined => (e.to as { room?: string }).room;
const ownKeys = (d: Device, id: string) => d.m.keyring.keyIds(id).filter((k) => d.m.keyring.entry(id, k)?.from === d.m.nick);

test('a new device wraps no room key before it holds a record: the service naming its account owner is not enough, and the record comes from the account’s own devices', async () => {
  const { id, bob, eve, B } = await rejoined('bob');
  const b = bob.m.nick;
  const bobNew = await loginDevice(server, b, bob.password, `dev-${b}-2`);
  const B2 = await run(bobNew);
  try {
    await bobNew.m.syncRooms();
    assert.equal(bobNew.m.room(id)?.owner, b, 'the service names bob owner');
    assert.ok(ownKeys(bobNew, id).length > 0, 'his new device holds keys his account wrapped');
    assert.equal(status(B2, id).recorded, false);
    assert.equal(B2.conv.membership.isOwner(id), false, 'no record, no owner');

    const calls = membersCalls(bobNew, id).length;
    await rotateIfOwner(B2, id);
    await assert.rejects(bobNew.m.rotateRoomKey(id), (e: { code?: string; message?: string }) => {
      return e.code === 'no_membership_record' && /no record/.test(e.message ?? '');
    });
    assert.equal(membersCalls(bobNew, id).length, calls, 'no key was made, so nothing was sent');
    assert.equal(await keyRows(server, id, eve.m.nick), 0, 'eve holds no key');
    assert.equal(status(B2, id).wait?.code, 'no_membership_record');

    // Bob's first device comes back and answers the new one's request with its record.
    const B1 = await run(bob, B.store);
    try {
      await until(() => status(B2, id).recorded, 'the record from bob’s other device');
      assert.equal(status(B2, id).owner, B1.conv.membership.status(id).owner);
      assert.deepEqual(status(B2, id).members, B1.conv.membership.status(id).members);
      assert.notEqual(status(B2, id).owner, b, 'the record names carol, who owns the room');
      assert.deepEqual(status(B2, id).warned, [eve.m.nick], 'the device that would rotate warns about eve');
      assert.equal(B2.conv.membership.isOwner(id), false);
      await rotateIfOwner(B2, id);
      await assert.rejects(bobNew.m.rotateRoomKey(id), { code: 'not_owner' });
      assert.equal(membersCalls(bobNew, id).length, calls);
      assert.equal(await keyRows(server, id, eve.m.nick), 0);
    } finally {
      await B1.close();
    }
    {
      // The answer came once: replayed after the record is gone, it is refused.
      const answers = B2.envs.filter((e) => e.from === b && roomOf(e) !== id);
      await B2.conv.membership.forget(id);
      for (const env of answers) await B2.conv.receive(env);
      assert.equal(status(B2, id).recorded, false, 'a replayed answer brings no record');
      // Nor does a part that is not sealed under the transfer key, sent by a device of the account to an open request.
      await bobNew.m.syncRooms();
      await until(async () => ((await B2.store.getMeta(K_RECORD_ASKS)) as unknown[] | undefined)?.length === 1, 'a new request');
      const [ask] = (await B2.store.getMeta(K_RECORD_ASKS)) as { nonce: string }[];
      const devices = roomOf(answers[0]!)!;
      await bob.m.send(`room:${devices}`, {
        type: 'records',
        device: `dev-${b}-2`,
        nonce: ask!.nonce,
        seq: 0,
        total: 1,
        data: 'A'.repeat(80),
        sentAt: 0,
        mid: newMid(),
      });
      await sleep(300);
      await B2.conv.membership.loadAll();
      assert.equal(status(B2, id).recorded, false, 'a forged part brings no record');
    }
  } finally {
    await B2.close();
  }
});

test('a member’s messages wait while the service lists a member nobody added, say why, and go once the owner removes it', async () => {
  const { id, bob, carol, eve, C: first } = await rejoined('bob');
  const [b, c] = [bob.m.nick, carol.m.nick];
  const bobNew = await loginDevice(server, b, bob.password, `dev-${b}-2`);
  const [B2, C] = [await run(bobNew), await run(carol, first.store)];
  try {
    await rotateIfOwner(B2, id);
    await carol.m.syncRooms();
    assert.equal(status(C, id).wait?.code, 'unannounced_member', 'the hold starts at once, with no grace');
    const posts = () => carol.requests.filter((r) => r === 'POST /api/messages').length;
    const before = posts();
    const msg = await C.conv.sendText(`room:${id}`, 'for carol and bob only');
    await until(() => C.conv.outbox.pending.some((i) => i.id === msg.id && i.state === 'held'), 'carol’s message to be held');
    const stored = await C.store.get(msg.id);
    assert.match(stored?.note ?? '', new RegExp(`nobody added \\(${eve.m.nick}\\)`), 'the chat says why');
    assert.equal(posts(), before, 'nothing was encrypted for the room');
    assert.equal(await keyRows(server, id, eve.m.nick), 0);

    // The service gives up and names carol owner again; she removes eve, with a new key of hers for
    // the recorded members, and the message goes by itself.
    await tamper(server, 'UPDATE rooms SET owner = ? WHERE id = ?', c, id);
    await carol.m.syncRooms();
    await carol.m.changeMembers(id, { remove: [eve.m.nick] });
    await until(async () => (await C.store.get(msg.id))?.state === 'sent', 'the held message to go');
    assert.deepEqual(await keyHolders(server, id, carol.m.roomKeyId(id)!), [b, c].sort());
  } finally {
    await Promise.all([B2.close(), C.close()]);
  }
});

test('a member sends nothing under a room key its recorded owner did not make, even when the service lists nobody extra', async () => {
  const { id, bob, carol, eve, C: first } = await rejoined('bob');
  const [b, c] = [bob.m.nick, carol.m.nick];
  // A client of bob's that keeps no record (an older app) takes the service's word and wraps for eve.
  bob.m.setRoomGuard(null);
  await bob.m.syncRooms();
  await bob.m.rotateRoomKey(id);
  const keyId = bob.m.roomKeyId(id)!;
  assert.ok((await keyHolders(server, id, keyId)).includes(eve.m.nick), 'eve holds the key bob made');
  // The service now hides eve from the list (her key stays with her) and gives the room back to carol.
  await tamper(server, 'DELETE FROM room_members WHERE room_id = ? AND nick = ?', id, eve.m.nick);
  await tamper(server, 'UPDATE rooms SET owner = ? WHERE id = ?', c, id);
  const C = await run(carol, first.store);
  try {
    await carol.m.syncRooms();
    assert.equal(carol.m.roomKeyId(id), keyId, 'bob’s key is the newest');
    assert.deepEqual(status(C, id).unannounced, []);
    const w = status(C, id).wait;
    assert.ok(w?.code === 'room_key_not_owner' && w.wrapper === b && w.owner === c);
    const before = carol.requests.filter((r) => r === 'POST /api/messages').length;
    const msg = await C.conv.sendText(`room:${id}`, 'not under bob’s key');
    await until(() => C.conv.outbox.pending.some((i) => i.id === msg.id && i.state === 'held'), 'carol’s message to be held');
    assert.match((await C.store.get(msg.id))?.note ?? '', new RegExp(`made by ${b}, not by its owner ${c}`));
    assert.equal(carol.requests.filter((r) => r === 'POST /api/messages').length, before, 'nothing went under bob’s key');

    // Carol, the owner, makes a new key: it goes under hers.
    await carol.m.rotateRoomKey(id);
    await until(async () => (await C.store.get(msg.id))?.state === 'sent', 'the held message to go');
    assert.equal(await keyRows(server, id, eve.m.nick), 1, 'eve got nothing after bob’s key');
  } finally {
    await C.close();
  }
});

test('the real owner’s new device wraps no key for a member the service added: it waits for its record, then refuses', async () => {
  const { id, carol, eve, C } = await rejoined('carol');
  const c = carol.m.nick;
  const carolNew = await loginDevice(server, c, carol.password, `dev-${c}-2`);
  const C2 = await run(carolNew);
  try {
    await carolNew.m.syncRooms();
    assert.equal(carolNew.m.room(id)?.owner, c);
    assert.ok(ownKeys(carolNew, id).length > 0, 'her new device holds keys her account wrapped');
    assert.equal(C2.conv.membership.isOwner(id), false);
    const calls = membersCalls(carolNew, id).length;
    await rotateIfOwner(C2, id);
    await assert.rejects(carolNew.m.rotateRoomKey(id), { code: 'no_membership_record' });
    assert.equal(membersCalls(carolNew, id).length, calls);

    const C1 = await run(carol, C.store);
    try {
      await until(() => status(C2, id).recorded, 'the record from carol’s other device');
      assert.equal(C2.conv.membership.isOwner(id), true, 'the record names her owner');
      assert.deepEqual(status(C2, id).warned, [eve.m.nick]);
      await rotateIfOwner(C2, id);
      await assert.rejects(carolNew.m.rotateRoomKey(id), { code: 'unannounced_member' });
      assert.equal(membersCalls(carolNew, id).length, calls, 'no key was made');
      assert.equal(await keyRows(server, id, eve.m.nick), 0, 'eve holds no key');
    } finally {
      await C1.close();
    }
  } finally {
    await C2.close();
  }
});
