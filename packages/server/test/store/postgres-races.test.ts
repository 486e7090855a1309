/**
 * Races between instances: two (or more) PostgresStore instances, each with its own pool, on one
 * schema, firing the same operation at once. Exactly one wins and the others get the refusal
 * docs/API.md gives for the route; nothing throws, nothing is stored twice.
 */
import { describe, test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { ATTACHMENT, LIMITS } from '@svc/protocol';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { id16, iv, ct, ulid } from '@svc/testkit/harness';
import { dropSchema, freshSchema, sqlIn, testPgUrl } from '@svc/testkit/postgres';
import { NOW, account, wrapped } from './suite.js';

const dm = (id: string, from: string, to: string, senderDevice: string) => ({
  id,
  from,
  to: { dm: to },
  keyId: 'dm',
  iv: iv(),
  ct: ct(),
  senderDevice,
  now: NOW,
});

/** Sorted JSON of each result, so "one of each" reads plainly whatever order they came in. */
const outcomes = (rs: unknown[]) => rs.map((r) => JSON.stringify(r)).sort();

describe('store: postgres, instances racing on one database', () => {
  let schema: string;
  let a: PostgresStore;
  let b: PostgresStore;
  beforeEach(async () => {
    schema = await freshSchema();
    a = await PostgresStore.open(testPgUrl, { schema, max: 4 });
    b = await PostgresStore.open(testPgUrl, { schema, max: 4 });
  });
  afterEach(async () => {
    await a.close();
    await b.close();
    await dropSchema(schema);
  });

  test('attachment parts of one account sent at once through two instances never pass its quota together', async () => {
    // Each attachment counts at least one whole part against the quota: five fit, the sixth does not.
    const part = (store: PostgresStore, i: number) =>
      store.putAttachmentPart({
        id: id16(),
        nick: 'ann',
        n: 0,
        data: new Uint8Array(20_000).fill(i),
        now: NOW,
        quotaBytes: 5 * ATTACHMENT.partBytes,
      });
    const rs = await Promise.all(Array.from({ length: 12 }, (_, i) => part(i % 2 ? a : b, i)));
    assert.equal(rs.filter((r) => 'ok' in r).length, 5);
    assert.equal(rs.filter((r) => 'error' in r && r.error === 'quota_exceeded').length, 7);
    assert.deepEqual(await sqlIn(schema, 'SELECT SUM(bytes)::int AS b, COUNT(*)::int AS n FROM attachments'), [{ b: 100_000, n: 5 }]);
  });

  test('one attachment id made at once by two accounts through two instances: one upload, the other attachment_conflict', async () => {
    const id = id16();
    const rs = await Promise.all(
      ['ann', 'bob'].map((nick, i) =>
        [a, b][i]!.putAttachmentPart({ id, nick, n: 0, data: new Uint8Array(10), now: NOW, quotaBytes: ATTACHMENT.partBytes }),
      ),
    );
    assert.deepEqual(outcomes(rs), outcomes([{ ok: true }, { error: 'attachment_conflict' }]));
    assert.equal((await sqlIn(schema, 'SELECT n FROM attachment_parts')).length, 1);
  });

  test('the same nick registered twice: one account, the other nick_taken', async () => {
    const [x, y] = [account('alice'), account('alice')];
    const rs = await Promise.all([a.registerAccount(x), b.registerAccount(y)]);
    assert.deepEqual(outcomes(rs), outcomes([{ ok: true }, { error: 'nick_taken' }]));
    const winner = 'ok' in rs[0] ? x : y;
    assert.equal((await a.getAccount('alice'))?.publicKey, winner.publicKey);
    assert.equal((await sqlIn(schema, 'SELECT id FROM sessions')).length, 1, 'only the winner got a session');
  });

  test('the last use of an invite taken twice: one account, the other invalid_invite', async () => {
    await a.createInvite('last', 1, null, NOW);
    const rs = await Promise.all([
      a.registerAccount(account('alice', { requireInvite: true, invite: 'last' })),
      b.registerAccount(account('bob', { requireInvite: true, invite: 'last' })),
    ]);
    assert.deepEqual(outcomes(rs), outcomes([{ ok: true }, { error: 'invalid_invite' }]));
    assert.deepEqual(await sqlIn(schema, 'SELECT uses_left FROM invites'), [{ uses_left: 0 }]);
  });

  test('the same room id created twice: one room, the other room_conflict', async () => {
    await a.registerAccount(account('alice'));
    await a.registerAccount(account('bob'));
    const roomId = id16();
    const rs = await Promise.all([
      a.createRoom({ id: roomId, name: 'A', owner: 'alice', keyId: id16(), keys: [wrapped('alice')], now: NOW }),
      b.createRoom({ id: roomId, name: 'B', owner: 'bob', keyId: id16(), keys: [wrapped('bob')], now: NOW }),
    ]);
    const won = rs.filter((r) => 'room' in r);
    assert.equal(won.length, 1);
    assert.deepEqual(
      rs.filter((r) => 'error' in r),
      [{ error: 'room_conflict' }],
    );
    const owner = 'room' in won[0]! ? won[0].room.owner : '';
    assert.deepEqual(await sqlIn(schema, 'SELECT nick FROM room_members'), [{ nick: owner }], 'the loser did not join');
    assert.equal((await sqlIn(schema, 'SELECT 1 FROM room_keys')).length, 1);
  });

  test('the same device id added by two accounts: one holds it, the other device_conflict', async () => {
    await a.registerAccount(account('alice'));
    await a.registerAccount(account('bob'));
    const rs = await Promise.all([a.addDevice('alice', 'device-01', NOW), b.addDevice('bob', 'device-01', NOW)]);
    assert.equal(rs.filter((r) => 'status' in r && r.status === 'created').length, 1);
    assert.deepEqual(
      rs.filter((r) => 'error' in r),
      [{ error: 'device_conflict' }],
    );
    assert.equal((await sqlIn(schema, 'SELECT 1 FROM devices')).length, 1);
  });

  test('the same device id added twice by one account: created once, then exists', async () => {
    await a.registerAccount(account('alice'));
    const rs = await Promise.all([a.addDevice('alice', 'device-01', NOW), b.addDevice('alice', 'device-01', NOW)]);
    assert.deepEqual(rs.map((r) => ('status' in r ? r.status : r.error)).sort(), ['created', 'exists']);
  });

  test('the last device slot taken twice: one created, the other limit_reached', async () => {
    await a.registerAccount(account('alice'));
    for (let i = 1; i < LIMITS.devicesPerAccount; i++) await a.addDevice('alice', `device-x${i}`, NOW);
    const rs = await Promise.all([a.addDevice('alice', 'device-last1', NOW), b.addDevice('alice', 'device-last2', NOW)]);
    assert.deepEqual(rs.map((r) => ('status' in r ? r.status : r.error)).sort(), ['created', 'limit_reached']);
    assert.equal((await a.listDevices('alice')).length, LIMITS.devicesPerAccount);
  });

  test('one envelope id sent twice by its sender: queued once, the other a retry with the same ts', async () => {
    for (const n of ['alice', 'bob']) await a.registerAccount(account(n));
    await a.addDevice('alice', 'a-device-1', NOW);
    await a.addDevice('bob', 'b-device-1', NOW);
    const id = ulid(NOW);
    const rs = await Promise.all([a.sendMessage(dm(id, 'alice', 'bob', 'a-device-1')), b.sendMessage(dm(id, 'alice', 'bob', 'a-device-1'))]);
    assert.deepEqual(rs.map((r) => ('status' in r ? r.status : r.error)).sort(), ['queued', 'retry']);
    const retry = rs.find((r) => 'status' in r && r.status === 'retry');
    assert.deepEqual(retry, { status: 'retry', id, ts: NOW });
    assert.equal((await a.readQueue('b-device-1', 0, 10)).length, 1);
    await Promise.all([a.flushQueueCounts(), b.flushQueueCounts()]);
    assert.deepEqual(await sqlIn(schema, 'SELECT queue_len FROM queue_lengths WHERE device_id = $1', ['b-device-1']), [{ queue_len: 1 }]);
  });

  test('one envelope id sent by two senders at once: one queued, the other id_conflict', async () => {
    for (const n of ['alice', 'bob', 'carol']) await a.registerAccount(account(n));
    for (const [n, d] of [
      ['alice', 'a-device-1'],
      ['bob', 'b-device-1'],
      ['carol', 'c-device-1'],
    ] as const)
      await a.addDevice(n, d, NOW);
    const id = ulid(NOW);
    const rs = await Promise.all([a.sendMessage(dm(id, 'alice', 'carol', 'a-device-1')), b.sendMessage(dm(id, 'bob', 'carol', 'b-device-1'))]);
    assert.deepEqual(rs.map((r) => ('status' in r ? r.status : r.error)).sort(), ['id_conflict', 'queued']);
    assert.equal((await a.readQueue('c-device-1', 0, 10)).length, 1);
  });

  test('a members change racing a leave: the room ends in the state of one order or the other', async () => {
    for (const n of ['alice', 'bob', 'carol', 'dave']) await a.registerAccount(account(n));
    const roomId = id16();
    await a.createRoom({ id: roomId, name: 'R', owner: 'alice', keyId: id16(), keys: [wrapped('alice')], now: NOW });
    await a.changeMembers({
      roomId,
      caller: 'alice',
      add: ['bob', 'carol'],
      remove: [],
      keyId: id16(),
      keys: ['alice', 'bob', 'carol'].map(wrapped),
      now: NOW,
    });
    const keyId = id16();
    const [change, leave] = await Promise.all([
      a.changeMembers({ roomId, caller: 'alice', add: ['dave'], remove: ['carol'], keyId, keys: ['alice', 'bob', 'dave'].map(wrapped), now: NOW }),
      b.leaveRoom(roomId, 'bob'),
    ]);
    assert.ok(leave.left);
    const room = (await a.listRooms('alice'))[0]!;
    if ('room' in change) {
      // The change came first (bob got a key), then bob left: a rotation is owed again.
      assert.deepEqual(room.members, ['alice', 'dave']);
      assert.equal(room.needsRekey, true);
    } else {
      // The leave came first: the keys named bob, who was no longer a member.
      assert.deepEqual(change, { error: 'keys_mismatch' });
      assert.deepEqual(room.members, ['alice', 'carol']);
    }
    const keyHolders = await sqlIn<{ member: string }>(schema, 'SELECT DISTINCT member FROM room_keys ORDER BY member');
    assert.deepEqual(
      keyHolders.map((k) => k.member),
      [...room.members].sort(),
      'only members hold keys',
    );
  });

  test('two members changes at once: both apply, one after the other, on the membership the first left', async () => {
    for (const n of ['alice', 'bob', 'carol']) await a.registerAccount(account(n));
    const roomId = id16();
    await a.createRoom({ id: roomId, name: 'R', owner: 'alice', keyId: id16(), keys: [wrapped('alice')], now: NOW });
    const rs = await Promise.all([
      a.changeMembers({ roomId, caller: 'alice', add: ['bob'], remove: [], keyId: id16(), keys: ['alice', 'bob'].map(wrapped), now: NOW }),
      b.changeMembers({ roomId, caller: 'alice', add: ['carol'], remove: [], keyId: id16(), keys: ['alice', 'carol'].map(wrapped), now: NOW }),
    ]);
    // The second to run sees the first one's new member, whom its keys leave out.
    assert.equal(rs.filter((r) => 'room' in r).length, 1);
    assert.deepEqual(
      rs.filter((r) => 'error' in r),
      [{ error: 'keys_mismatch' }],
    );
    assert.equal((await a.listRooms('alice'))[0]!.members.length, 2);
  });

  test('an account deleted while a room adds it: it ends in no room', async () => {
    for (const n of ['alice', 'bob']) await a.registerAccount(account(n));
    const roomId = id16();
    await a.createRoom({ id: roomId, name: 'R', owner: 'alice', keyId: id16(), keys: [wrapped('alice')], now: NOW });
    const [change] = await Promise.all([
      a.changeMembers({ roomId, caller: 'alice', add: ['bob'], remove: [], keyId: id16(), keys: ['alice', 'bob'].map(wrapped), now: NOW }),
      b.deleteAccount('bob', NOW),
    ]);
    assert.ok('room' in change || change.error === 'unknown_user');
    assert.deepEqual((await a.listRooms('alice'))[0]!.members, ['alice']);
    assert.deepEqual(await sqlIn(schema, "SELECT 1 FROM room_keys WHERE member = 'bob'"), []);
  });

  test('accounts sharing rooms, joined in different orders, deleted from two instances at once: every deletion completes, no deadlock surfaces', async () => {
    const nicks = Array.from({ length: 8 }, (_, i) => `user${i}`);
    for (const n of nicks) await a.registerAccount(account(n));
    // Room r is created by user r; in round k it adds user r+k. So user u joins the rooms in the
    // order u, u-1, u-2, …: every two accounts meet the rooms they share in different orders.
    const roomIds = nicks.map(() => id16());
    const members = nicks.map((n) => [n]);
    for (const [r, roomId] of roomIds.entries()) {
      await a.createRoom({ id: roomId, name: `R${r}`, owner: nicks[r]!, keyId: id16(), keys: [wrapped(nicks[r]!)], now: NOW });
    }
    for (let k = 1; k < nicks.length; k++) {
      for (const [r, roomId] of roomIds.entries()) {
        const joining = nicks[(r + k) % nicks.length]!;
        members[r]!.push(joining);
        const c = await a.changeMembers({
          roomId,
          caller: nicks[r]!,
          add: [joining],
          remove: [],
          keyId: id16(),
          keys: members[r]!.map(wrapped),
          now: NOW,
        });
        assert.ok('room' in c);
      }
    }
    const rs = await Promise.all(nicks.map((n, i) => (i % 2 ? a : b).deleteAccount(n, NOW)));
    for (const roomId of roomIds) {
      const leaves = rs.map((r) => r.rooms.find((l) => l.roomId === roomId)!);
      assert.ok(leaves.every((l) => l.left));
      assert.equal(leaves.filter((l) => l.deleted).length, 1, 'the last one out deleted the room');
    }
    for (const t of ['rooms', 'room_members', 'room_keys', 'room_key_ids']) assert.deepEqual(await sqlIn(schema, `SELECT 1 FROM ${t}`), [], t);
  });

  test('first DMs crossing in both directions: each side gets one contact row, no deadlock surfaces', async () => {
    for (const n of ['alice', 'bob']) await a.registerAccount(account(n));
    await a.addDevice('alice', 'a-device-1', NOW);
    await a.addDevice('bob', 'b-device-1', NOW);
    const sends = [];
    for (let i = 0; i < 10; i++) {
      sends.push(a.sendMessage(dm(ulid(NOW), 'alice', 'bob', 'a-device-1')));
      sends.push(b.sendMessage(dm(ulid(NOW), 'bob', 'alice', 'b-device-1')));
    }
    const rs = await Promise.all(sends);
    assert.ok(rs.every((r) => 'status' in r && r.status === 'queued'));
    assert.deepEqual(
      (await a.listContacts('alice')).map((c) => c.nick),
      ['bob'],
    );
    assert.deepEqual(
      (await a.listContacts('bob')).map((c) => c.nick),
      ['alice'],
    );
    assert.equal((await a.readQueue('b-device-1', 0, 100)).length, 10);
  });

  test('concurrent sends and acks to one device: its queue pages by seq without gaps, and its length is exact once both instances have counted', async () => {
    for (const n of ['alice', 'bob', 'carol']) await a.registerAccount(account(n));
    for (const [n, d] of [
      ['alice', 'a-device-1'],
      ['bob', 'b-device-1'],
      ['carol', 'c-device-1'],
    ] as const)
      await a.addDevice(n, d, NOW);
    const ids: string[] = [];
    const sends = [];
    for (let i = 0; i < 40; i++) {
      const id = ulid(NOW);
      ids.push(id);
      sends.push(i % 2 ? a.sendMessage(dm(id, 'alice', 'carol', 'a-device-1')) : b.sendMessage(dm(id, 'bob', 'carol', 'b-device-1')));
    }
    const acks = [a.ack('c-device-1', ids.slice(0, 10)), b.ack('c-device-1', ids.slice(10, 20))];
    await Promise.all([...sends, ...acks]);
    const seen = new Set<string>();
    let after = 0;
    for (;;) {
      const page = await a.readQueue('c-device-1', after, 7);
      for (const e of page) seen.add(e.id);
      if (page.length < 7) break;
      after = page.at(-1)!.seq;
    }
    await Promise.all([a.flushQueueCounts(), b.flushQueueCounts()]);
    const [row] = await sqlIn<{ queue_len: number; n: number }>(
      schema,
      "SELECT queue_len, (SELECT COUNT(*)::int FROM queue WHERE device_id = 'c-device-1') AS n FROM queue_lengths WHERE device_id = 'c-device-1'",
    );
    assert.equal(row!.queue_len, row!.n, 'the kept length equals the rows');
    assert.equal(seen.size, row!.n, 'paging by seq returns every entry');
  });

  test('push-pending claimed from two instances at once: each device is claimed once', async () => {
    await a.registerAccount(account('alice'));
    const devs = ['device-01', 'device-02', 'device-03'];
    for (const d of devs) {
      await a.addDevice('alice', d, NOW);
      await a.setPushSubscription(d, { endpoint: `https://push.example/${d}`, p256dh: 'p', auth: 'a' });
    }
    const rs = await Promise.all([a.claimPush(devs), b.claimPush([...devs].reverse()), a.claimPush(devs)]);
    assert.deepEqual(
      rs
        .flat()
        .map((t) => t.deviceId)
        .sort(),
      devs,
    );
  });

  test('meta created by several instances at once: all of them get the one stored value', async () => {
    const rs = await Promise.all([a.getOrCreateMeta('vapid_keys', () => 'from-a'), b.getOrCreateMeta('vapid_keys', () => 'from-b')]);
    assert.equal(rs[0], rs[1]);
    assert.deepEqual(await sqlIn(schema, 'SELECT value FROM meta'), [{ value: rs[0] }]);
  });

  test('a leave racing a delete of the room: 204-style results, the room is gone, no rows left', async () => {
    for (const n of ['alice', 'bob']) await a.registerAccount(account(n));
    const roomId = id16();
    await a.createRoom({ id: roomId, name: 'R', owner: 'alice', keyId: id16(), keys: [wrapped('alice')], now: NOW });
    await a.changeMembers({ roomId, caller: 'alice', add: ['bob'], remove: [], keyId: id16(), keys: ['alice', 'bob'].map(wrapped), now: NOW });
    const [del, leave] = await Promise.all([a.deleteRoom(roomId, 'alice'), b.leaveRoom(roomId, 'bob')]);
    assert.ok('deleted' in del && del.deleted);
    assert.equal(typeof leave.left, 'boolean');
    for (const t of ['rooms', 'room_members', 'room_keys', 'room_key_ids']) assert.deepEqual(await sqlIn(schema, `SELECT 1 FROM ${t}`), [], t);
  });
});
