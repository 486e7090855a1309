/**
 * The storage test suite, written once against the Store interface and run for every backend
 * (sqlite.test.ts and postgres.test.ts call it). Each test gets a fresh, empty store.
 */
import { describe, test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { LIMITS, type Target } from '@svc/protocol';
import type { Admit, Store, NewAccount, SendInput } from '../../src/store/types.js';
import { sendRefusal } from '../../src/rules/send.js';
import { b64, id16, iv, ct, kdf, publicKey, ulid } from '@svc/testkit/harness';

export interface StoreFactory {
  make(): Promise<Store>;
  destroy(store: Store): Promise<void>;
}

/** A fixed clock for store tests, and a valid new account; shared with the PostgreSQL race tests. */
export const NOW = 1_800_000_000_000;

export function account(nick: string, extra: Partial<NewAccount> = {}): NewAccount {
  return {
    nick,
    authKeyHash: new Uint8Array(32).fill(7),
    kdf: kdf() as NewAccount['kdf'],
    publicKey: publicKey(),
    encryptedKey: { iv: iv(), ct: ct(48) },
    invite: null,
    requireInvite: false,
    sessionId: b64(32),
    now: NOW,
    ...extra,
  };
}

export const wrapped = (to: string) => ({ to, iv: iv(), ct: ct() });

export function storeSuite(name: string, factory: StoreFactory): void {
  describe(`store: ${name}`, () => {
    let store: Store;
    beforeEach(async () => {
      store = await factory.make();
    });
    afterEach(async () => {
      await factory.destroy(store);
    });

    test('meta values are created once and then kept', async () => {
      const a = await store.getOrCreateMeta('k', () => 'first');
      const b = await store.getOrCreateMeta('k', () => 'second');
      assert.equal(a, 'first');
      assert.equal(b, 'first');
    });

    test('registerAccount stores the account and its session; a taken nick is refused', async () => {
      const a = account('alice');
      assert.deepEqual(await store.registerAccount(a), { ok: true });
      const got = await store.getAccount('alice');
      assert.equal(got?.publicKey, a.publicKey);
      assert.deepEqual(got?.kdf, a.kdf);
      assert.equal((await store.getSession(a.sessionId))?.nick, 'alice');
      assert.deepEqual(await store.registerAccount(account('alice')), { error: 'nick_taken' });
    });

    test('invites: required, unknown, expired and used up are refused; a use is consumed only on success', async () => {
      await store.createInvite('code1', 1, null, NOW);
      await store.createInvite('old', 5, NOW - 1, NOW - 10);
      assert.deepEqual(await store.registerAccount(account('a1', { requireInvite: true })), { error: 'invite_required' });
      assert.deepEqual(await store.registerAccount(account('a1', { requireInvite: true, invite: 'nope' })), { error: 'invalid_invite' });
      assert.deepEqual(await store.registerAccount(account('a1', { requireInvite: true, invite: 'old' })), { error: 'invalid_invite' });
      await store.registerAccount(account('taken'));
      assert.deepEqual(await store.registerAccount(account('taken', { requireInvite: true, invite: 'code1' })), { error: 'nick_taken' });
      assert.deepEqual(await store.registerAccount(account('a1', { requireInvite: true, invite: 'code1' })), { ok: true });
      assert.deepEqual(await store.registerAccount(account('a2', { requireInvite: true, invite: 'code1' })), { error: 'invalid_invite' });
    });

    test("changePassword ends every other session and keeps the caller's", async () => {
      const a = account('alice');
      await store.registerAccount(a);
      await store.createSession({ id: 'other', nick: 'alice', now: NOW });
      const ended = await store.changePassword(
        'alice',
        { authKeyHash: new Uint8Array(32).fill(9), kdf: a.kdf, encryptedKey: a.encryptedKey },
        a.sessionId,
      );
      assert.deepEqual(ended, ['other']);
      assert.equal(await store.getSession('other'), null);
      assert.ok(await store.getSession(a.sessionId));
      assert.deepEqual([...(await store.getAccount('alice'))!.authKeyHash], new Array(32).fill(9));
    });

    test('sessions and device owners asked for at the same time each get their own answer, an unknown one null', async () => {
      await store.registerAccount(account('alice'));
      const b = account('bob');
      await store.registerAccount(b);
      await store.addDevice('alice', 'device-a1', NOW);
      await store.addDevice('bob', 'device-b1', NOW);
      await store.createSession({ id: 'device-a1', nick: 'bob', now: NOW + 5 }); // a session id equal to a device id
      // Asked in one turn of the event loop, as the session check asks (http/session.ts): on
      // PostgreSQL one statement answers them all (store/postgres/lookups.ts).
      const [s1, o1, s2, o2, s3, o3, o4] = await Promise.all([
        store.getSession(b.sessionId),
        store.deviceOwner('device-a1'),
        store.getSession('device-a1'),
        store.deviceOwner('device-b1'),
        store.getSession('no-such-session'),
        store.deviceOwner('no-such-device'),
        store.deviceOwner(b.sessionId),
      ]);
      assert.equal(s1?.nick, 'bob');
      assert.equal(o1, 'alice');
      assert.deepEqual(s2, { id: 'device-a1', nick: 'bob', createdAt: NOW + 5, lastUsedAt: NOW + 5 });
      assert.equal(o2, 'bob');
      assert.equal(s3, null);
      assert.equal(o3, null);
      assert.equal(o4, null, 'a session id is not a device');
    });

    test('devices: created, existing, conflict and the per-account limit', async () => {
      await store.registerAccount(account('alice'));
      await store.registerAccount(account('bob'));
      const r = await store.addDevice('alice', 'device-01', NOW);
      assert.ok('status' in r && r.status === 'created');
      const again = await store.addDevice('alice', 'device-01', NOW + 1);
      assert.ok('status' in again && again.status === 'exists' && again.device.createdAt === NOW);
      assert.deepEqual(await store.addDevice('bob', 'device-01', NOW), { error: 'device_conflict' });
      for (let i = 1; i < LIMITS.devicesPerAccount; i++) await store.addDevice('alice', `device-x${i}`, NOW);
      assert.deepEqual(await store.addDevice('alice', 'device-over', NOW), { error: 'limit_reached' });
      assert.equal((await store.listDevices('alice')).length, LIMITS.devicesPerAccount);
    });

    test('claimPush sets push-pending once per device until a stream opens or a subscription is set', async () => {
      await store.registerAccount(account('alice'));
      await store.addDevice('alice', 'device-01', NOW);
      await store.addDevice('alice', 'device-02', NOW);
      assert.deepEqual(await store.claimPush(['device-01', 'device-02']), []);
      await store.setPushSubscription('device-01', { endpoint: 'https://push.example/1', p256dh: 'p', auth: 'a' });
      assert.deepEqual(
        (await store.claimPush(['device-01', 'device-02'])).map((t) => t.deviceId),
        ['device-01'],
      );
      assert.deepEqual(await store.claimPush(['device-01']), []);
      await store.deviceConnected('device-01', NOW);
      assert.equal((await store.claimPush(['device-01'])).length, 1);
      await store.setPushSubscription('device-01', { endpoint: 'https://push.example/2', p256dh: 'p', auth: 'a' });
      const again = await store.claimPush(['device-01']);
      assert.equal(again[0]?.endpoint, 'https://push.example/2');
      await store.dropPushSubscription('device-01', 'https://push.example/1');
      assert.ok((await store.listDevices('alice'))[0]!.push, 'a stale endpoint does not drop the new subscription');
      await store.dropPushSubscription('device-01', 'https://push.example/2');
      assert.equal((await store.listDevices('alice'))[0]!.push, false);
    });

    test('send targets say which devices can be pushed: subscribed and no push pending', async () => {
      await store.registerAccount(account('alice'));
      await store.registerAccount(account('bob'));
      for (const [n, d] of [
        ['alice', 'a-device-1'],
        ['bob', 'b-device-1'],
        ['bob', 'b-device-2'],
        ['bob', 'b-device-3'],
      ])
        await store.addDevice(n!, d!, NOW);
      await store.setPushSubscription('b-device-2', { endpoint: 'https://push.example/2', p256dh: 'p', auth: 'a' });
      await store.setPushSubscription('b-device-3', { endpoint: 'https://push.example/3', p256dh: 'p', auth: 'a' });
      await store.claimPush(['b-device-3']);
      const r = await store.sendMessage({
        id: ulid(NOW),
        from: 'alice',
        to: { dm: 'bob' },
        keyId: 'dm',
        iv: iv(),
        ct: ct(),
        senderDevice: 'a-device-1',
        now: NOW,
      });
      assert.ok('status' in r && r.status === 'queued');
      assert.deepEqual(r.targets, [
        { deviceId: 'b-device-1', nick: 'bob', pushable: false },
        { deviceId: 'b-device-2', nick: 'bob', pushable: true },
        { deviceId: 'b-device-3', nick: 'bob', pushable: false },
      ]);
    });

    test("sendMessage queues a DM for the recipient and the sender's other devices, never the sending device", async () => {
      await store.registerAccount(account('alice'));
      await store.registerAccount(account('bob'));
      for (const [n, d] of [
        ['alice', 'a-device-1'],
        ['alice', 'a-device-2'],
        ['bob', 'b-device-1'],
      ])
        await store.addDevice(n!, d!, NOW);
      const id = ulid(NOW);
      const r = await store.sendMessage({
        id,
        from: 'alice',
        to: { dm: 'bob' },
        keyId: 'dm',
        iv: iv(),
        ct: ct(),
        senderDevice: 'a-device-1',
        now: NOW,
      });
      assert.ok('status' in r && r.status === 'queued');
      assert.deepEqual(r.targets.map((t) => t.deviceId).sort(), ['a-device-2', 'b-device-1']);
      assert.deepEqual(Object.keys(JSON.parse(r.json)), ['id', 'to', 'from', 'keyId', 'iv', 'ct', 'ts']);
      assert.equal((await store.readQueue('b-device-1', 0, 10)).length, 1);
      assert.equal((await store.readQueue('a-device-1', 0, 10)).length, 0);
      assert.deepEqual(
        (await store.listContacts('bob')).map((c) => c.nick),
        ['alice'],
      );
      assert.deepEqual(
        (await store.listContacts('alice')).map((c) => c.nick),
        ['bob'],
      );

      const retry = await store.sendMessage({
        id,
        from: 'alice',
        to: { dm: 'bob' },
        keyId: 'dm',
        iv: iv(),
        ct: ct(),
        senderDevice: 'a-device-1',
        now: NOW + 5,
      });
      assert.deepEqual(retry, { status: 'retry', id, ts: NOW });
      assert.equal((await store.readQueue('b-device-1', 0, 10)).length, 1);
      const clash = await store.sendMessage({
        id,
        from: 'bob',
        to: { dm: 'alice' },
        keyId: 'dm',
        iv: iv(),
        ct: ct(),
        senderDevice: 'b-device-1',
        now: NOW,
      });
      assert.deepEqual(clash, { error: 'id_conflict' });

      await store.ack('b-device-1', [id, 'unknown-id']);
      assert.equal((await store.readQueue('b-device-1', 0, 10)).length, 0);
      assert.equal((await store.readQueue('a-device-2', 0, 10)).length, 1, "one device's ack leaves the others' queues");
    });

    test("every send refusal: the caller's checks on the store's facts and the transaction agree, and a refused send writes nothing", async () => {
      for (const n of ['alice', 'bob', 'carol', 'gone']) await store.registerAccount(account(n));
      for (const [n, d] of [
        ['alice', 'a-device-1'],
        ['bob', 'b-device-1'],
        ['carol', 'c-device-1'],
        ['gone', 'g-device-1'],
      ])
        await store.addDevice(n!, d!, NOW);
      const roomId = id16();
      const oldKey = id16();
      const newKey = id16();
      assert.ok('room' in (await store.createRoom({ id: roomId, name: 'Room', owner: 'alice', keyId: oldKey, keys: [wrapped('alice')], now: NOW })));
      const joined = await store.changeMembers({
        roomId,
        caller: 'alice',
        add: ['bob'],
        remove: [],
        keyId: newKey,
        keys: ['alice', 'bob'].map(wrapped),
        now: NOW,
      });
      assert.ok('room' in joined);
      await store.deleteAccount('gone', NOW);
      const send = (from: string, device: string, to: Target, keyId: string, id = ulid(NOW)): SendInput => ({
        id,
        from,
        to,
        keyId,
        iv: iv(),
        ct: ct(),
        senderDevice: device,
        now: NOW,
      });

      const cases: [what: string, m: SendInput, refusal: string][] = [
        ['a room that does not exist', send('alice', 'a-device-1', { room: id16() }, newKey), 'not_member'],
        ['a sender who is not a member', send('carol', 'c-device-1', { room: roomId }, newKey), 'not_member'],
        ['a key the room never had', send('alice', 'a-device-1', { room: roomId }, id16()), 'unknown_key'],
        ['a nick never registered', send('alice', 'a-device-1', { dm: 'zed' }, 'dm'), 'unknown_user'],
        ['a deleted account', send('alice', 'a-device-1', { dm: 'gone' }, 'dm'), 'unknown_user'],
        ['the sender itself', send('alice', 'a-device-1', { dm: 'alice' }, 'dm'), 'self'],
      ];
      const queued = async (): Promise<number> => {
        let n = 0;
        for (const d of ['a-device-1', 'b-device-1', 'c-device-1']) n += (await store.readQueue(d, 0, 100)).length;
        return n;
      };
      // The caller's checks (the domain's steps 5 and 6) get the facts the store read and apply the
      // rules to them; the store applies the same rules again when a caller lets a send through.
      const byRules: Admit = async (facts) => {
        const refused = sendRefusal(current!.from, current!.to, facts);
        if (refused) throw new Error(refused.error);
      };
      let current: SendInput | undefined;
      for (const [what, m, refusal] of cases) {
        current = m;
        await assert.rejects(store.sendMessage(m, byRules), { message: refusal }, `the caller's checks: ${what}`);
        assert.deepEqual(await store.sendMessage(m, async () => undefined), { error: refusal }, `the transaction: ${what}`);
      }
      assert.equal(await queued(), 0, 'nothing queued');
      assert.deepEqual(await store.listContacts('alice'), [], 'no contact added');
      assert.equal((await store.stats()).queuedEnvelopes, 0);

      // An older key of the room stays valid for sending; a member's send is accepted.
      const ok = send('bob', 'b-device-1', { room: roomId }, oldKey);
      current = ok;
      const stored = await store.sendMessage(ok, byRules);
      assert.ok('status' in stored && stored.status === 'queued');
      // A used id is answered before any refusal: its sender, now gone from the room, gets a retry;
      // anyone else a conflict, whatever the target.
      await store.leaveRoom(roomId, 'bob');
      assert.deepEqual(await store.sendMessage({ ...ok, now: NOW + 9 }), { status: 'retry', id: ok.id, ts: NOW });
      assert.deepEqual(await store.sendMessage(send('carol', 'c-device-1', { room: roomId }, newKey, ok.id)), { error: 'id_conflict' });
      assert.deepEqual(await store.sendMessage(send('alice', 'a-device-1', { dm: 'zed' }, 'dm', ok.id)), { error: 'id_conflict' });
      assert.equal(await queued(), 1, 'only the accepted send is queued');
    });

    test('a device queue keeps the newest entries up to its cap, as its replay reads it', async () => {
      await store.registerAccount(account('alice'));
      await store.registerAccount(account('bob'));
      await store.addDevice('alice', 'a-device-1', NOW);
      await store.addDevice('bob', 'b-device-1', NOW);
      const ids = Array.from({ length: LIMITS.queuePerDevice + 3 }, (_, i) => ulid(NOW + i));
      const send = (i: number) =>
        store.sendMessage({
          id: ids[i]!,
          from: 'alice',
          to: { dm: 'bob' },
          keyId: 'dm',
          iv: iv(),
          ct: ct(),
          senderDevice: 'a-device-1',
          now: NOW + i,
        });
      // The oldest four one after another, so that they are queued in this order; the rest many at
      // a time, as concurrent requests send them (one at a time, each PostgreSQL commit waiting for
      // its own flush, took over a minute).
      for (let i = 0; i < 4; i++) await send(i);
      for (let i = 4; i < ids.length; i += 250) await Promise.all(Array.from({ length: Math.min(250, ids.length - i) }, (_, j) => send(i + j)));
      // As a replay reads it: the stream opens first (domain/streams.ts).
      await store.deviceConnected('b-device-1', NOW + LIMITS.queuePerDevice + 3);
      const first = await store.readQueue('b-device-1', 0, 1);
      assert.equal(first[0]?.id, ids[3]);
      let n = 0;
      let after = 0;
      for (;;) {
        const page = await store.readQueue('b-device-1', after, 1000);
        n += page.length;
        if (page.length < 1000) break;
        after = page[page.length - 1]!.seq;
      }
      assert.equal(n, LIMITS.queuePerDevice);
    });

    test('rooms: create, members, leave with ownership passing, and deletion when empty', async () => {
      for (const n of ['alice', 'bob', 'carol']) await store.registerAccount(account(n));
      const roomId = id16();
      const k1 = id16();
      const created = await store.createRoom({ id: roomId, name: 'Room', owner: 'alice', keyId: k1, keys: [wrapped('alice')], now: NOW });
      assert.ok('room' in created);
      assert.deepEqual(created.room.members, ['alice']);
      assert.deepEqual(await store.createRoom({ id: roomId, name: 'Again', owner: 'bob', keyId: id16(), keys: [wrapped('bob')], now: NOW }), {
        error: 'room_conflict',
      });

      const k2 = id16();
      assert.deepEqual(await store.changeMembers({ roomId, caller: 'bob', add: [], remove: [], keyId: k2, keys: [], now: NOW }), {
        error: 'not_owner',
      });
      assert.deepEqual(await store.changeMembers({ roomId, caller: 'alice', add: ['zed'], remove: [], keyId: k2, keys: [], now: NOW }), {
        error: 'unknown_user',
      });
      assert.deepEqual(await store.changeMembers({ roomId, caller: 'alice', add: [], remove: ['bob'], keyId: k2, keys: [], now: NOW }), {
        error: 'invalid',
        field: 'remove',
      });
      assert.deepEqual(await store.changeMembers({ roomId, caller: 'alice', add: [], remove: ['alice'], keyId: k2, keys: [], now: NOW }), {
        error: 'owner',
      });
      assert.deepEqual(await store.changeMembers({ roomId, caller: 'alice', add: [], remove: [], keyId: k1, keys: [wrapped('alice')], now: NOW }), {
        error: 'key_exists',
      });
      assert.deepEqual(
        await store.changeMembers({ roomId, caller: 'alice', add: ['bob'], remove: [], keyId: k2, keys: [wrapped('alice')], now: NOW }),
        { error: 'keys_mismatch' },
      );
      const f = await store.changeMembers({
        roomId,
        caller: 'alice',
        add: ['bob', 'carol'],
        remove: [],
        keyId: k2,
        keys: ['alice', 'bob', 'carol'].map(wrapped),
        now: NOW,
      });
      assert.ok('room' in f);
      assert.deepEqual(f.room.members, ['alice', 'bob', 'carol']);
      assert.equal((await store.listRooms('bob'))[0]?.keys.length, 1);
      assert.equal((await store.listRooms('alice'))[0]?.keys.length, 2);

      const left = await store.leaveRoom(roomId, 'alice');
      assert.ok(left.left && !left.deleted);
      assert.equal(left.fanout?.room.owner, 'bob', 'ownership passes to the earliest-joined member');
      assert.equal(left.fanout?.room.needsRekey, true);
      assert.deepEqual((await store.leaveRoom(roomId, 'alice')).left, false);
      await store.leaveRoom(roomId, 'bob');
      const last = await store.leaveRoom(roomId, 'carol');
      assert.ok(last.deleted);
      assert.deepEqual(await store.listRooms('carol'), []);
    });

    test('deleteAccount leaves rooms, drops sessions, devices and contacts, and retires the nick', async () => {
      const a = account('alice');
      await store.registerAccount(a);
      await store.registerAccount(account('bob'));
      await store.addDevice('alice', 'a-device-1', NOW);
      await store.addContact('bob', 'alice', NOW);
      const roomId = id16();
      await store.createRoom({ id: roomId, name: 'R', owner: 'alice', keyId: id16(), keys: [wrapped('alice')], now: NOW });
      await store.changeMembers({
        roomId,
        caller: 'alice',
        add: ['bob'],
        remove: [],
        keyId: id16(),
        keys: [wrapped('alice'), wrapped('bob')],
        now: NOW,
      });
      const r = await store.deleteAccount('alice', NOW);
      assert.deepEqual(r.sessions, [a.sessionId]);
      assert.deepEqual(r.devices, ['a-device-1']);
      assert.equal(r.rooms[0]?.fanout?.room.owner, 'bob');
      assert.equal(await store.getAccount('alice'), null);
      assert.equal(await store.nickExists('alice'), true);
      assert.deepEqual(await store.listContacts('bob'), []);
      assert.deepEqual(await store.registerAccount(account('alice')), { error: 'nick_taken' });
    });

    test('purge drops idle sessions and envelopes nobody needs', async () => {
      await store.registerAccount(account('alice', { sessionId: 'old' }));
      await store.registerAccount(account('bob'));
      await store.addDevice('alice', 'a-device-1', NOW);
      await store.addDevice('bob', 'b-device-1', NOW);
      const id = ulid(NOW);
      await store.sendMessage({ id, from: 'alice', to: { dm: 'bob' }, keyId: 'dm', iv: iv(), ct: ct(), senderDevice: 'a-device-1', now: NOW });
      await store.ack('b-device-1', [id]);
      const later = NOW + LIMITS.sessionIdleMs + 1;
      const r = await store.purge(later);
      assert.ok(r.sessionIds.includes('old'));
      assert.equal(r.envelopes, 1);
      assert.equal(await store.getSession('old'), null);
    });
    test('purge drops queue entries past retention, keeps newer ones, and keeps the queue counts exact', async () => {
      await store.registerAccount(account('alice'));
      await store.registerAccount(account('bob'));
      await store.addDevice('alice', 'a-device-1', NOW);
      await store.addDevice('bob', 'b-device-1', NOW);
      await store.addDevice('bob', 'b-device-2', NOW);
      const old = ulid(NOW);
      const recent = ulid(NOW + LIMITS.queueRetentionMs);
      await store.sendMessage({ id: old, from: 'alice', to: { dm: 'bob' }, keyId: 'dm', iv: iv(), ct: ct(), senderDevice: 'a-device-1', now: NOW });
      await store.sendMessage({
        id: recent,
        from: 'alice',
        to: { dm: 'bob' },
        keyId: 'dm',
        iv: iv(),
        ct: ct(),
        senderDevice: 'a-device-1',
        now: NOW + LIMITS.queueRetentionMs,
      });
      assert.equal((await store.stats()).queuedEnvelopes, 4);
      const r = await store.purge(NOW + LIMITS.queueRetentionMs + 1);
      assert.equal(r.envelopes, 1, 'the expired envelope, queued nowhere any more, is gone');
      for (const d of ['b-device-1', 'b-device-2'])
        assert.deepEqual(
          (await store.readQueue(d, 0, 10)).map((e) => e.id),
          [recent],
        );
      assert.equal((await store.stats()).queuedEnvelopes, 2);
    });
    test('invites are listed oldest first with uses left and expiry; a revoked one registers nobody', async () => {
      await store.createInvite('first', 2, null, NOW - 20);
      await store.createInvite('second', 1, NOW + 60_000, NOW - 10);
      assert.deepEqual(await store.listInvites(), [
        { code: 'first', usesLeft: 2, expiresAt: null, createdAt: NOW - 20 },
        { code: 'second', usesLeft: 1, expiresAt: NOW + 60_000, createdAt: NOW - 10 },
      ]);
      assert.deepEqual(await store.registerAccount(account('a1', { requireInvite: true, invite: 'first' })), { ok: true });
      assert.equal((await store.listInvites())[0]?.usesLeft, 1);
      assert.equal(await store.revokeInvite('first'), true);
      assert.equal(await store.revokeInvite('first'), false);
      assert.deepEqual(await store.registerAccount(account('a2', { requireInvite: true, invite: 'first' })), { error: 'invalid_invite' });
      assert.deepEqual(
        (await store.listInvites()).map((i) => i.code),
        ['second'],
      );
    });

    test('stats count accounts, devices, rooms, queued envelopes and subscriptions', async () => {
      assert.deepEqual(await store.stats(), {
        accounts: 0,
        devices: 0,
        rooms: 0,
        queuedEnvelopes: 0,
        pushSubscriptions: 0,
        attachments: 0,
        attachmentBytes: 0,
      });
      await store.registerAccount(account('alice'));
      await store.registerAccount(account('bob'));
      await store.registerAccount(account('gone'));
      await store.deleteAccount('gone', NOW);
      await store.addDevice('alice', 'a-device-1', NOW);
      await store.addDevice('bob', 'b-device-1', NOW);
      await store.addDevice('bob', 'b-device-2', NOW);
      await store.setPushSubscription('b-device-2', { endpoint: 'https://push.example/x', p256dh: 'p', auth: 'a' });
      await store.createRoom({ id: id16(), name: 'R', owner: 'alice', keyId: id16(), keys: [wrapped('alice')], now: NOW });
      const id = ulid(NOW);
      await store.sendMessage({ id, from: 'alice', to: { dm: 'bob' }, keyId: 'dm', iv: iv(), ct: ct(), senderDevice: 'a-device-1', now: NOW });
      assert.deepEqual(await store.stats(), {
        accounts: 2,
        devices: 3,
        rooms: 1,
        queuedEnvelopes: 2,
        pushSubscriptions: 1,
        attachments: 0,
        attachmentBytes: 0,
      });
      await store.ack('b-device-1', [id]);
      assert.equal((await store.stats()).queuedEnvelopes, 1);
    });
  });
}
