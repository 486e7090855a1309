/**
 * Which room key sendRoom uses, against a real server with a hostile (or flaky) service simulated
 * in front of one device by rewriting its answers: the room's newest key as the service lists it,
 * never an older one, and only when its wrapper's key (the one it was unwrapped with) is trusted
 * for sending.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Room, RoomKey } from '@svc/protocol';
import { generateIdentity, newRoomKey, pairKey, SdkError, wrapRoomKey, type FetchLike } from '../src/index.js';
import { nick, register, startServer, type TestServer } from './server.js';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

const pathOf = (url: string): string => new URL(url).pathname;
const isGet = (init?: RequestInit): boolean => (init?.method ?? 'GET') === 'GET';

/** An answer with another JSON body, keeping the status and the Date header (the SDK's clock reads it). */
function answer(res: Response, body: unknown): Response {
  return Response.json(body, { status: res.status, headers: { date: res.headers.get('date') ?? new Date().toUTCString() } });
}

/** Records the keyId of every room message the device posts. */
function recordPosts(f: FetchLike, posted: string[], fake?: (keyId: string) => boolean): FetchLike {
  return async (url, init) => {
    if (init?.method === 'POST' && pathOf(url) === '/api/messages') {
      const b = JSON.parse(init.body as string) as { id: string; keyId: string };
      posted.push(b.keyId);
      // A hostile service accepts what it can read, whatever the real store says.
      if (fake?.(b.keyId)) return Response.json({ id: b.id, ts: Date.now() }, { status: 202, headers: { date: new Date().toUTCString() } });
    }
    return f(url, init);
  };
}

test('a room key wrapped under a changed, not yet accepted key of its wrapper is not used for sending', async () => {
  const alice = await register(server);
  // The service's own key pair, which it shows to bob as alice's.
  const fake = await generateIdentity();
  let showFake = false;
  // eslint-disable-next-line prefer-const -- read by the fake service's closures above, set once the room exists
  let evil: RoomKey | undefined;
  let roomId = '';
  const posted: string[] = [];
  // A TOFU hook like the web app's: pin the first key; a changed key may read but not send.
  const pins = new Map<string, string>();
  const checks: string[] = [];
  const label = (pk: string): string => (pk === alice.m.publicKey ? 'real' : pk === fake.publicKey ? 'fake' : 'other');
  const bob = await register(server, nick(), undefined, {
    keyCheck: (n, pk, purpose) => {
      if (n === alice.m.nick) checks.push(`${purpose}:${label(pk)}`);
      const pinned = pins.get(n);
      if (pinned === undefined) pins.set(n, pk);
      else if (pinned !== pk && purpose === 'send') throw new SdkError('untrusted_key', { message: `The key of ${n} changed.` });
    },
    wrap: (f) =>
      recordPosts(
        async (url, init) => {
          const res = await f(url, init);
          const path = pathOf(url);
          if (showFake && path === `/api/users/${alice.m.nick}`) return answer(res, { ...((await res.json()) as object), publicKey: fake.publicKey });
          if (evil && isGet(init) && path === '/api/rooms') {
            const rooms = (await res.json()) as Room[];
            return answer(
              res,
              rooms.map((r) => (r.id === roomId ? { ...r, keys: [...r.keys, evil] } : r)),
            );
          }
          return res;
        },
        posted,
        (keyId) => keyId === evil?.keyId,
      ),
  });

  const room = await alice.m.createRoom('Target', [bob.m.nick]);
  roomId = room.id;
  await bob.m.syncRooms();
  const real = bob.m.roomKeyId(room.id)!;
  await bob.m.sendRoom(room.id, 'before the attack');
  assert.deepEqual(posted, [real]);
  assert.deepEqual(checks, ['receive:real', 'send:real']);

  // The attack: bob is shown a substituted key for alice (as after a reload, the SDK asks the
  // service again), and the service lists a new room key "from alice" wrapped under it.
  const rk = newRoomKey();
  const wrapped = await wrapRoomKey(await pairKey(fake.privateKey, alice.m.nick, bob.m.nick, bob.m.publicKey), room.id, rk.keyId, bob.m.nick, rk.key);
  evil = { keyId: rk.keyId, from: alice.m.nick, iv: wrapped.iv, ct: wrapped.ct };
  showFake = true;
  bob.m.forgetPeer(alice.m.nick);
  await bob.m.syncRooms();
  // Reading stays possible (the app warns), and the key is the room's newest as listed...
  assert.equal(bob.m.keyring.has(room.id, rk.keyId), true);
  assert.equal(bob.m.roomKeyId(room.id), rk.keyId);
  assert.deepEqual(bob.m.keyring.entry(room.id, rk.keyId)?.publicKey, fake.publicKey);
  // ...but sending under it waits for consent, and does not fall back to the older key either.
  await assert.rejects(bob.m.sendRoom(room.id, 'secret'), { code: 'untrusted_key' });
  assert.deepEqual(posted, [real]);
  assert.equal(checks.at(-1), 'send:fake');

  // The service shows alice's real key again but keeps listing the key: it is checked against the
  // key it was unwrapped with, not the one shown now, so it stays held.
  showFake = false;
  bob.m.forgetPeer(alice.m.nick);
  await bob.m.syncRooms();
  await assert.rejects(bob.m.sendRoom(room.id, 'secret'), { code: 'untrusted_key' });
  assert.deepEqual(posted, [real]);

  // Only once the user accepts that key (the app pins it and calls forgetPeer) is it used.
  pins.set(alice.m.nick, fake.publicKey);
  bob.m.forgetPeer(alice.m.nick);
  await bob.m.sendRoom(room.id, 'after consent');
  assert.deepEqual(posted, [real, rk.keyId]);

  // One's own keys need no check: alice's sends never ask her hook (she has none) and go out.
  const sent = await alice.m.sendRoom(room.id, 'owner');
  assert.ok(sent.id);
});

test("when the room's newest key cannot be unwrapped, sendRoom refuses instead of using the older key, and uses the newest once it unwraps", async () => {
  const alice = await register(server);
  const carol = await register(server);
  let damage: string | undefined;
  const posted: string[] = [];
  const keyErrors: string[] = [];
  const bob = await register(server, nick(), undefined, {
    onKeyError: (_roomId, keyId) => keyErrors.push(keyId),
    wrap: (f) =>
      recordPosts(async (url, init) => {
        const res = await f(url, init);
        if (damage === undefined || !isGet(init) || pathOf(url) !== '/api/rooms') return res;
        // A transient fault: the wrap of one key arrives damaged.
        const rooms = (await res.json()) as Room[];
        const flip = (ct: string): string => (ct[0] === 'A' ? 'B' : 'A') + ct.slice(1);
        return answer(
          res,
          rooms.map((r) => ({ ...r, keys: r.keys.map((k) => (k.keyId === damage ? { ...k, ct: flip(k.ct) } : k)) })),
        );
      }, posted),
  });

  const room = await alice.m.createRoom('Flaky', [bob.m.nick, carol.m.nick]);
  await bob.m.syncRooms();
  const older = bob.m.roomKeyId(room.id)!;
  assert.equal(bob.m.keyring.has(room.id, older), true);

  // Carol is removed: the new key is for alice and bob only, but bob's copy fails to unwrap.
  await alice.m.changeMembers(room.id, { remove: [carol.m.nick] });
  const newest = alice.m.roomKeyId(room.id)!;
  damage = newest;
  await bob.m.syncRooms();
  assert.deepEqual(keyErrors, [newest]);
  assert.equal(bob.m.roomKeyId(room.id), newest);
  assert.equal(bob.m.keyring.has(room.id, newest), false);

  // sendRoom reads the rooms once more, then refuses: nothing goes out under the key carol holds.
  const from = bob.requests.length;
  await assert.rejects(bob.m.sendRoom(room.id, 'not for carol'), (e: unknown) => {
    assert.ok(e instanceof SdkError);
    assert.equal(e.code, 'no_room_key');
    assert.equal(e.next, 'none');
    return true;
  });
  assert.deepEqual(bob.requests.slice(from), ['GET /api/rooms']);
  assert.deepEqual(posted, []);

  // The fault passes: the next send's re-read unwraps the key and sends under it.
  damage = undefined;
  await bob.m.sendRoom(room.id, 'not for carol');
  assert.deepEqual(posted, [newest]);
});

test("the newest key follows the service's order: a late event or an answer overtaken by a rotation does not bring an older key back", async () => {
  const alice = await register(server);
  let hold: { got: () => void; until: Promise<void> } | undefined;
  const posted: string[] = [];
  const bob = await register(server, nick(), undefined, {
    wrap: (f) =>
      recordPosts(async (url, init) => {
        const res = await f(url, init);
        const h = hold;
        if (h && isGet(init) && pathOf(url) === '/api/rooms') {
          hold = undefined;
          h.got();
          await h.until;
        }
        return res;
      }, posted),
  });
  const room = await alice.m.createRoom('Order', [bob.m.nick]);
  await bob.m.syncRooms();
  const k1 = bob.m.roomKeyId(room.id)!;

  // Alice rotates while bob's stream is down; bob's re-read is answered (listing k1, k2) but the
  // answer is slow, and meanwhile a further rotation's `room` event (k3) arrives.
  await alice.m.rotateRoomKey(room.id);
  const k2 = alice.m.roomKeyId(room.id)!;
  let release!: () => void;
  let answered!: () => void;
  const got = new Promise<void>((r) => (answered = r));
  hold = { got: answered, until: new Promise<void>((r) => (release = r)) };
  const slow = bob.m.syncRooms();
  await got;
  await alice.m.rotateRoomKey(room.id);
  const k3 = alice.m.roomKeyId(room.id)!;
  const now = (await bob.api.rooms()).find((r) => r.id === room.id)!;
  assert.deepEqual(
    now.keys.map((k) => k.keyId),
    [k1, k2, k3],
  );
  // The event carries only the receiving member's new key.
  await bob.m.applyRoom({ ...now, keys: [now.keys[2]!] });
  assert.equal(bob.m.roomKeyId(room.id), k3);
  release();
  await slow;
  assert.equal(bob.m.roomKeyId(room.id), k3, 'the answer asked for before k3 came does not win');
  assert.equal(bob.m.keyring.has(room.id, k2), true, 'its keys are still taken in for reading');

  // A late event for k2 changes nothing either.
  await bob.m.applyRoom({ ...now, keys: [now.keys[1]!] });
  assert.equal(bob.m.roomKeyId(room.id), k3);
  await bob.m.sendRoom(room.id, 'under k3');
  assert.deepEqual(posted, [k3]);

  // Removed and added again while offline: the service forgot bob's old keys, and a re-read asked
  // for after that lists only the new one, which becomes the newest.
  await alice.m.changeMembers(room.id, { remove: [bob.m.nick] });
  await alice.m.changeMembers(room.id, { add: [bob.m.nick] });
  const k5 = alice.m.roomKeyId(room.id)!;
  await bob.m.syncRooms();
  assert.equal(bob.m.roomKeyId(room.id), k5);
  await bob.m.sendRoom(room.id, 'back');
  assert.deepEqual(posted, [k3, k5]);
});
