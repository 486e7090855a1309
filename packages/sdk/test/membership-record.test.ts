/** The membership record's rules on their own (conversation/membership-record.ts), without a service. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Room } from '@svc/protocol';
import type { MembersPlain } from '../src/index.js';
import {
  applyAnnouncement,
  compare,
  followOwnerGone,
  memberChanges,
  mergeAnnouncements,
  parseRecord,
  planChange,
  sendWait,
  settleLeaves,
  startRecord,
  type MembershipRecord,
} from '../src/conversation/membership-record.js';

const ROOM = 'r'.repeat(22);
const listed = (owner: string, members: string[]): Room => ({ id: ROOM, name: 'x', owner, members, createdAt: 0, keys: [], needsRekey: false });
const plain = (owner: string, members: string[], added: string[] = [], removed: string[] = []): MembersPlain => ({
  v: 1,
  type: 'members',
  room: ROOM,
  owner,
  members,
  added,
  removed,
  sentAt: 1,
});
const at = (id: string, from: string, me = 'carol', room: Room | undefined = listed('alice', ['alice', 'bob', 'carol'])) => ({
  id,
  from,
  room: ROOM,
  me,
  listed: room,
});
const rec = (r: ReturnType<typeof applyAnnouncement>): MembershipRecord => {
  assert.ok(r.ok, r.ok ? '' : r.why);
  return r.record;
};

test('a record starts only from an announcement of the listed owner that names its sender and this account', () => {
  assert.equal(applyAnnouncement(undefined, at('01', 'bob'), plain('bob', ['alice', 'bob', 'carol'])).ok, false, 'not the owner the service lists');
  assert.equal(applyAnnouncement(undefined, at('01', 'alice'), plain('alice', ['alice', 'bob'])).ok, false, 'does not name this account');
  assert.equal(
    applyAnnouncement(undefined, { ...at('01', 'alice'), listed: undefined }, plain('alice', ['alice', 'carol'])).ok,
    false,
    'room not listed',
  );
  const r = rec(applyAnnouncement(undefined, at('01', 'alice'), plain('alice', ['alice', 'bob', 'carol'], ['carol'])));
  assert.deepEqual([r.owner, r.members, r.since, r.last], ['alice', ['alice', 'bob', 'carol'], '01', { alice: '01' }]);
});

test("a nick enters a record only when the owner's announcement names it as added; what it omits leaves", () => {
  const r0 = startRecord(ROOM, 'alice', ['alice', 'bob', 'carol']);
  const r1 = rec(applyAnnouncement(r0, at('02', 'alice'), plain('alice', ['alice', 'carol', 'eve', 'dave'], ['dave'], ['bob'])));
  assert.deepEqual(r1.members, ['alice', 'carol', 'dave']);
  assert.equal(applyAnnouncement(r1, at('03', 'carol'), plain('carol', ['alice', 'carol', 'eve'], ['eve'])).ok, false, 'a member is not the owner');
  assert.equal(applyAnnouncement(r1, at('03', 'carol'), plain('alice', ['alice', 'carol', 'eve'], ['eve'])).ok, false, 'nor by naming the owner');
  assert.equal(applyAnnouncement(r1, at('02', 'alice'), plain('alice', ['alice'])).ok, false, 'the same id again');
  assert.equal(applyAnnouncement(r1, at('01', 'alice'), plain('alice', ['alice'])).ok, false, 'an older one');
  assert.equal(applyAnnouncement({ ...r1, since: '05' }, at('04', 'alice'), plain('alice', ['alice'])).ok, false, 'older than the record');
  assert.equal(applyAnnouncement(r1, at('03', 'alice'), plain('alice', ['carol'])).ok, false, 'the owner must be in its own announcement');
});

test('a member announces its own leaving; the owner leaving passes the room to the earliest-joined member', () => {
  const r0 = startRecord(ROOM, 'alice', ['alice', 'bob', 'carol']);
  const bobLeaves = rec(
    applyAnnouncement(r0, at('02', 'bob', 'carol', listed('alice', ['alice', 'carol'])), plain('alice', ['alice', 'carol'], [], ['bob'])),
  );
  assert.deepEqual([bobLeaves.owner, bobLeaves.members], ['alice', ['alice', 'carol']]);
  const ownerLeaves = rec(
    applyAnnouncement(r0, at('02', 'alice', 'bob', listed('bob', ['bob', 'carol'])), plain('carol', ['bob', 'carol'], [], ['alice'])),
  );
  assert.deepEqual(
    [ownerLeaves.owner, ownerLeaves.members, ownerLeaves.owed],
    ['bob', ['bob', 'carol'], true],
    'the rule, not the announcement, names the next owner',
  );
  assert.equal(applyAnnouncement(bobLeaves, at('03', 'bob'), plain('alice', ['alice', 'carol'], [], ['bob'])).ok, false, 'a non-member cannot leave');
});

test('without an announcement the record follows the service only to the owner the rule names', () => {
  const r0 = startRecord(ROOM, 'alice', ['alice', 'bob', 'carol']);
  assert.equal(followOwnerGone(r0, listed('carol', ['bob', 'carol']), 'carol'), null, 'the service skipped bob');
  assert.equal(followOwnerGone(r0, listed('bob', ['alice', 'bob', 'carol']), 'carol'), null, 'the owner is still listed');
  const r1 = followOwnerGone(r0, listed('bob', ['bob', 'carol']), 'bob');
  assert.deepEqual([r1?.owner, r1?.members, r1?.owed], ['bob', ['bob', 'carol'], true]);
  // A recorded member the service no longer lists is passed over, as the service passes it over.
  const r2 = followOwnerGone(r0, listed('carol', ['carol']), 'bob');
  assert.deepEqual([r2?.owner, r2?.owed], ['carol', undefined]);
});

test("the owner's new key is planned for the recorded members in the record's join order, never for an unannounced one", () => {
  const r0 = startRecord(ROOM, 'alice', ['alice', 'bob', 'carol']);
  assert.deepEqual(planChange(r0, listed('alice', ['alice', 'bob', 'eve', 'carol']), { add: [], remove: [] }), { ok: false, unannounced: ['eve'] });
  assert.deepEqual(planChange(r0, listed('alice', ['alice', 'bob', 'eve', 'carol']), { add: ['dave'], remove: ['eve'] }), {
    ok: true,
    final: ['alice', 'bob', 'carol', 'dave'],
  });
  assert.deepEqual(
    planChange(r0, listed('alice', ['alice', 'bob', 'eve', 'carol']), { add: ['eve'], remove: [] }),
    { ok: true, final: ['alice', 'bob', 'carol', 'eve'] },
    'added on purpose, after the recorded members',
  );
  assert.deepEqual(
    planChange(r0, listed('alice', ['alice', 'carol']), { add: [], remove: [] }),
    { ok: true, final: ['alice', 'carol'] },
    'a member the service no longer lists gets no key',
  );
});

test('a waiting announcement replaced by a later one keeps its additions and removals that still hold', () => {
  const earlier = plain('alice', ['alice', 'bob', 'dave'], ['dave'], ['carol']);
  assert.deepEqual(mergeAnnouncements(earlier, plain('alice', ['alice', 'dave', 'carol'], ['carol'], ['bob'])), {
    added: ['dave', 'carol'],
    removed: ['bob'],
  });
});

test('a self-leave counts only once the service stops listing the member: until then it is pending, and the rotation still wraps for it', () => {
  const r0 = startRecord(ROOM, 'alice', ['alice', 'bob', 'carol']);
  const still = listed('alice', ['alice', 'bob', 'carol']);
  const pending = rec(applyAnnouncement(r0, at('02', 'bob', 'carol', still), plain('alice', ['alice', 'carol'], [], ['bob'])));
  assert.deepEqual([pending.members, pending.leaving], [['alice', 'bob', 'carol'], ['bob']]);
  assert.deepEqual(compare(pending, still).leaving, ['bob']);
  assert.deepEqual(planChange(pending, still, { add: [], remove: [] }), { ok: true, final: ['alice', 'bob', 'carol'] }, 'no rotation is blocked');
  assert.equal(settleLeaves(pending, still, 'carol'), null, 'still listed: nothing changes');
  const gone = settleLeaves(pending, listed('alice', ['alice', 'carol']), 'carol');
  assert.deepEqual([gone?.members, gone?.leaving], [['alice', 'carol'], undefined]);

  // The owner's leave waits the same way; the ownership passes when the service drops it.
  const ownerPending = rec(applyAnnouncement(r0, at('02', 'alice', 'bob', still), plain('bob', ['bob', 'carol'], [], ['alice'])));
  assert.equal(ownerPending.owner, 'alice');
  const passed = settleLeaves(ownerPending, listed('bob', ['bob', 'carol']), 'bob');
  assert.deepEqual([passed?.owner, passed?.members, passed?.owed], ['bob', ['bob', 'carol'], true]);
  // The owner's own announcement that drops a pending member ends its pending leave.
  const dropped = rec(applyAnnouncement(pending, at('03', 'alice', 'carol', still), plain('alice', ['alice', 'carol'], [], ['bob'])));
  assert.deepEqual([dropped.members, dropped.leaving], [['alice', 'carol'], undefined]);
});

test('join order, and so the next owner, comes from the record: a service that reorders its list changes neither', () => {
  const r0 = startRecord(ROOM, 'alice', ['alice', 'bob', 'carol']);
  const reordered = listed('alice', ['carol', 'alice', 'bob']);
  assert.deepEqual(planChange(r0, reordered, { add: ['dave'], remove: [] }), { ok: true, final: ['alice', 'bob', 'carol', 'dave'] });
  const left = rec(
    applyAnnouncement(r0, at('02', 'alice', 'carol', listed('carol', ['carol', 'bob'])), plain('carol', ['carol', 'bob'], [], ['alice'])),
  );
  assert.equal(left.owner, 'bob', 'bob joined before carol in the record');
  assert.equal(compare(left, listed('carol', ['carol', 'bob'])).ownerDisputed, true);
  assert.equal(followOwnerGone(r0, listed('carol', ['carol', 'bob']), 'carol'), null, 'the service naming carol is not followed');
});

test('a recorded member the service no longer lists is reported gone, and stays in the record until an announcement drops it', () => {
  const r0 = startRecord(ROOM, 'alice', ['alice', 'bob', 'eve']);
  const c = compare(r0, listed('alice', ['alice', 'bob']));
  assert.deepEqual([c.gone, c.unannounced], [['eve'], []]);
  assert.deepEqual(r0.members, ['alice', 'bob', 'eve']);
  assert.deepEqual(memberChanges(['alice', 'bob', 'eve'], r0.members, 'alice'), { joined: [], left: [] }, 'no line for what the service alone says');
  assert.deepEqual(memberChanges(['alice', 'bob', 'eve'], ['alice', 'bob', 'dave'], 'alice'), { joined: ['dave'], left: ['eve'] });
});

test('a message waits without a record, while the service lists a member the record lacks, or under a key not the recorded owner made', () => {
  const r0 = startRecord(ROOM, 'alice', ['alice', 'bob', 'carol']);
  const room = listed('alice', ['alice', 'bob', 'carol']);
  assert.deepEqual(sendWait(undefined, room, 'alice'), { code: 'no_membership_record' });
  assert.deepEqual(sendWait(r0, listed('alice', ['alice', 'bob', 'carol', 'eve']), 'alice'), { code: 'unannounced_member', nicks: ['eve'] });
  assert.deepEqual(sendWait(r0, room, 'bob'), { code: 'room_key_not_owner', wrapper: 'bob', owner: 'alice' });
  assert.equal(sendWait(r0, room, 'alice'), null);
  assert.equal(sendWait(r0, listed('alice', ['alice', 'bob']), 'alice'), null, 'a member gone from the list reads nothing new');
});

test('a record from another device is kept only when well formed and naming this account', () => {
  const good = { room: ROOM, owner: 'alice', members: ['alice', 'carol'], since: '', last: { alice: '01JD0000000000000000000001' } };
  assert.deepEqual(parseRecord(good, 'carol'), good);
  assert.equal(parseRecord({ ...good, members: ['alice'] }, 'carol'), null, 'without this account');
  assert.equal(parseRecord({ ...good, owner: 'bob' }, 'carol'), null, 'an owner who is no member');
  assert.equal(parseRecord({ ...good, members: ['alice', 'carol', 'carol'] }, 'carol'), null, 'a nick twice');
  assert.equal(parseRecord({ ...good, last: { alice: 'x' } }, 'carol'), null, 'a bad id');
  assert.equal(parseRecord({ ...good, room: 'x' }, 'carol'), null, 'a bad room id');
  assert.equal(parseRecord([good], 'carol'), null);
});
