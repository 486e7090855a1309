/**
 * The send rules (src/rules/send.ts) on their own: the order of the refusals of message step 5,
 * a used id answered before them, the targets and their order, the contacts of a first DM and
 * the queue cap. Both stores apply exactly these functions (test/store/suite.ts shows they agree).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LIMITS } from '@svc/protocol';
import {
  decideSend,
  dmTargets,
  firstDmContacts,
  queueOverflow,
  roomTargets,
  sendRefusal,
  type CandidateDevice,
  type MemberDevice,
} from '../../src/rules/send.js';
import type { SendInput } from '../../src/store/types.js';

const room = { room: 'r' };
const dm = (nick: string) => ({ dm: nick });

test('a room send: not_member comes before unknown_key, and a member with a known key passes', () => {
  assert.deepEqual(sendRefusal('a', room, { room: true, senderIsMember: false, keyIsKnown: false }), { error: 'not_member' });
  assert.deepEqual(sendRefusal('a', room, { room: true, senderIsMember: false, keyIsKnown: true }), { error: 'not_member' });
  assert.deepEqual(sendRefusal('a', room, { room: true, senderIsMember: true, keyIsKnown: false }), { error: 'unknown_key' });
  assert.equal(sendRefusal('a', room, { room: true, senderIsMember: true, keyIsKnown: true }), null);
});

test('a DM: unknown_user comes before self, and a live other account passes', () => {
  assert.deepEqual(sendRefusal('a', dm('b'), { room: false, recipientIsLive: false }), { error: 'unknown_user' });
  assert.deepEqual(sendRefusal('a', dm('a'), { room: false, recipientIsLive: false }), { error: 'unknown_user' });
  assert.deepEqual(sendRefusal('a', dm('a'), { room: false, recipientIsLive: true }), { error: 'self' });
  assert.equal(sendRefusal('a', dm('b'), { room: false, recipientIsLive: true }), null);
});

test('facts of the wrong kind for the target are a programming error, never a silent pass', () => {
  assert.throws(() => sendRefusal('a', room, { room: false, recipientIsLive: true }));
  assert.throws(() => sendRefusal('a', dm('b'), { room: true, senderIsMember: true, keyIsKnown: true }));
});

test('a used id is answered before any refusal: a retry for its sender, id_conflict for anyone else', () => {
  const m: SendInput = { id: 'x', from: 'a', to: room, keyId: 'k', iv: '', ct: '', senderDevice: 'd', now: 5 };
  const refused = { room: true as const, senderIsMember: false, keyIsKnown: false };
  assert.deepEqual(decideSend(m, { sender: 'a', ts: 1 }, refused), { status: 'retry', id: 'x', ts: 1 });
  assert.deepEqual(decideSend(m, { sender: 'b', ts: 1 }, refused), { error: 'id_conflict' });
  assert.deepEqual(decideSend(m, null, refused), { error: 'not_member' });
  assert.equal(decideSend(m, null, { room: true, senderIsMember: true, keyIsKnown: true }), null);
});

const device = (deviceId: string, nick: string, seq: number): CandidateDevice => ({ deviceId, nick, seq, pushable: false });

test("a DM's targets: the recipient's devices and the sender's other devices, in creation order", () => {
  const bob = [device('b1', 'bob', 2), device('b2', 'bob', 5)];
  const alice = [device('a1', 'alice', 1), device('a2', 'alice', 3), device('a3', 'alice', 9)];
  assert.deepEqual(
    dmTargets(bob, alice, 'a2').map((d) => d.deviceId),
    ['a1', 'b1', 'b2', 'a3'],
  );
  assert.deepEqual(dmTargets([], [device('a1', 'alice', 1)], 'a1'), [], 'the sending device is never a target');
});

test("a room send's targets: members in join order, each member's devices oldest first, never the sending device", () => {
  const member = (d: CandidateDevice, memberSeq: number): MemberDevice => ({ ...d, memberSeq });
  const devices = [
    member(device('c1', 'carol', 4), 7),
    member(device('a2', 'alice', 8), 1),
    member(device('a1', 'alice', 3), 1),
    member(device('b1', 'bob', 1), 9),
  ];
  assert.deepEqual(
    roomTargets(devices, 'a1').map((d) => d.deviceId),
    ['a2', 'c1', 'b1'],
  );
});

test("a first DM adds each side to the other's contacts, only where the row is missing and that side is under the limit", () => {
  const counts: Record<string, number> = { alice: 3, bob: LIMITS.contactsPerAccount };
  const asked: string[] = [];
  const known = (rows: string[]) => ({
    has: (nick: string, peer: string) => rows.includes(`${nick}>${peer}`),
    count: (nick: string) => {
      asked.push(nick);
      return counts[nick]!;
    },
  });
  assert.deepEqual(firstDmContacts('alice', 'bob', known([])), [['alice', 'bob']], 'bob is at the limit');
  assert.deepEqual(firstDmContacts('alice', 'bob', known(['alice>bob', 'bob>alice'])), []);
  asked.length = 0;
  firstDmContacts('alice', 'bob', known(['alice>bob']));
  assert.deepEqual(asked, ['bob'], 'a count is asked for only where a row is missing');
});

test('a full queue gives up exactly as many of its oldest entries as the new ones need', () => {
  const cap = LIMITS.queuePerDevice;
  assert.equal(queueOverflow(0, 1), 0);
  assert.equal(queueOverflow(cap - 1, 1), 0);
  assert.equal(queueOverflow(cap, 1), 1);
  assert.equal(queueOverflow(cap - 2, 5), 3);
  assert.equal(queueOverflow(cap + 4, 1), 5, 'a queue past its cap is cut back to it');
});
