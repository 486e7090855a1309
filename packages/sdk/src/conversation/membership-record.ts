/**
 * A room's membership as its members announced it (docs/CRYPTO.md, "Membership record"): the rules
 * alone, with no I/O. The service's list of members is open metadata it could change at will; the
 * record is what the room's own ciphertext said, so that a client wraps a new room key only for
 * people somebody in the room actually added.
 *
 * - A record starts on the device that creates the room, or from the first announcement a member
 *   sees that names both it and its sender, sent by the owner the service lists (the announcement
 *   that added the member carries the whole membership). A device of the owner that has none (a
 *   room from before the record, a device signed in later) starts one from the service's list the
 *   first time it sees the room: trust on first use, as for peer keys (room-members.ts counts a
 *   device as the owner's only if it also holds a room key its account made).
 * - Only the owner as the record knows it announces changes. A nick enters a record only through
 *   an announcement that names it in `added` (or the one the record starts from); everything else
 *   an announcement omits leaves. Announcements of one sender apply in the order of their envelope
 *   ids (a ULID the sender chose, bound by the AAD), none older than the record's start, so a
 *   replayed one changes nothing.
 * - A member announces its own leaving: it goes, and if it owned the room the member who joined
 *   earliest after it owns it now (the service's rule; `members` is kept in join order, as the
 *   service keeps it). When the service stops listing the owner without such an announcement (the
 *   owner's account was deleted), the record follows only if the service names that same member.
 * - A nick the service lists and the record lacks is never wrapped for; the app warns about it.
 *   A recorded nick the service no longer lists gets no key either (the service would refuse it);
 *   the owner's next announcement drops it.
 */
import type { Room } from '@svc/protocol';
import type { MembersPlain, PlainInput } from './plaintext.js';

export interface MembershipRecord {
  room: string;
  owner: string;
  /** In join order. */
  members: string[];
  /** Envelope id of the announcement the record started from; '' when this device started it. */
  since: string;
  /** Per sender: the envelope id of the newest announcement applied. */
  last: Record<string, string>;
  /** Ownership passed to this account and it has not announced the membership since. */
  owed?: boolean;
}

/** An announcement as it arrived: the envelope's id and authenticated sender, and the room it was sent to. */
export interface Arrival {
  id: string;
  from: string;
  room: string;
  /** This account. */
  me: string;
  /** The room as the service lists it now, if it does. */
  listed: Room | undefined;
}

export type Applied = { ok: true; record: MembershipRecord; added: string[]; removed: string[] } | { ok: false; why: string };

const unique = (list: string[]): string[] => [...new Set(list)];
const without = (list: string[], drop: Iterable<string>): string[] => {
  const d = new Set(drop);
  return list.filter((n) => !d.has(n));
};

export function startRecord(room: string, owner: string, members: string[], since = ''): MembershipRecord {
  return { room, owner, members: unique(members), since, last: {} };
}

/** Who owns the room once `leaving` is gone: the member who joined earliest after it. */
export function successor(members: string[], leaving: string): string | undefined {
  return members.find((n) => n !== leaving);
}

function diff(before: string[], after: string[]): { added: string[]; removed: string[] } {
  return { added: without(after, before), removed: without(before, after) };
}

/** Takes one `members` announcement into the record (or starts the record from it). */
export function applyAnnouncement(rec: MembershipRecord | undefined, a: Arrival, p: MembersPlain): Applied {
  if (p.room !== a.room) return { ok: false, why: 'announcement of another room' };
  if (!rec) {
    // The announcement that added this member: the owner the service lists, naming itself owner.
    if (p.owner !== a.from || a.listed?.owner !== a.from) return { ok: false, why: 'first announcement not from the owner' };
    if (!p.members.includes(a.from) || !p.members.includes(a.me)) return { ok: false, why: 'first announcement without its sender or this account' };
    const record = startRecord(a.room, a.from, p.members, a.id);
    record.last[a.from] = a.id;
    return { ok: true, record, added: without(record.members, [a.me]), removed: [] };
  }
  if (a.id <= rec.since || a.id <= (rec.last[a.from] ?? '')) return { ok: false, why: 'stale announcement' };
  const leaving = p.removed.length === 1 && p.removed[0] === a.from && p.added.length === 0 && !p.members.includes(a.from);
  let next: MembershipRecord;
  if (leaving) {
    if (!rec.members.includes(a.from)) return { ok: false, why: 'leave of a non-member' };
    const members = without(rec.members, [a.from]);
    const owner = a.from === rec.owner ? (successor(rec.members, a.from) ?? rec.owner) : rec.owner;
    next = { ...rec, owner, members };
    if (owner !== rec.owner && owner === a.me) next.owed = true;
  } else {
    if (a.from !== rec.owner || p.owner !== a.from) return { ok: false, why: 'announcement not from the owner' };
    if (!p.members.includes(a.from)) return { ok: false, why: 'owner missing from its announcement' };
    const allowed = new Set([...rec.members, ...p.added]);
    next = { ...rec, members: unique(p.members.filter((n) => allowed.has(n))) };
  }
  next.last = { ...rec.last, [a.from]: a.id };
  return { ok: true, record: next, ...diff(rec.members, next.members) };
}

/**
 * The service no longer lists the recorded owner, and no leave announcement said so (the owner's
 * account was deleted, or the announcement was lost): the record follows when the service names
 * the member the ownership rule gives, the earliest-joined recorded member it still lists. Returns
 * null when nothing changes.
 */
export function followOwnerGone(rec: MembershipRecord, listed: Room, me: string): MembershipRecord | null {
  if (listed.members.includes(rec.owner)) return null;
  const next = rec.members.find((n) => n !== rec.owner && listed.members.includes(n));
  if (!next || listed.owner !== next) return null;
  return { ...rec, owner: next, members: without(rec.members, [rec.owner]), ...(next === me ? { owed: true } : {}) };
}

/** How the service's list stands against the record. */
export function compare(rec: MembershipRecord, listed: Room): { unannounced: string[]; gone: string[]; ownerDisputed: boolean } {
  return { unannounced: without(listed.members, rec.members), gone: without(rec.members, listed.members), ownerDisputed: listed.owner !== rec.owner };
}

export type Plan = { ok: true; final: string[] } | { ok: false; unannounced: string[] };

/**
 * The membership a new room key is wrapped for, in the service's join order: the recorded members
 * the service lists, plus `add`, less `remove`. Refused while the service lists a nick neither
 * recorded nor named in the change (adding it, or removing it, is the owner's explicit decision).
 */
export function planChange(rec: MembershipRecord, listed: Room, change: { add: string[]; remove: string[] }): Plan {
  const named = new Set([...change.add, ...change.remove]);
  const unannounced = without(listed.members, rec.members).filter((n) => !named.has(n));
  if (unannounced.length > 0) return { ok: false, unannounced };
  const keep = new Set([...rec.members, ...change.add]);
  const stay = listed.members.filter((n) => keep.has(n) && !change.remove.includes(n));
  return { ok: true, final: unique([...stay, ...change.add.filter((n) => !change.remove.includes(n))]) };
}

/** The announcement of the record as it stands, naming what this change added and removed. */
export function announcement(rec: MembershipRecord, added: string[], removed: string[], mid: string): PlainInput {
  return {
    type: 'members',
    room: rec.room,
    owner: rec.owner,
    members: [...rec.members],
    added: unique(added),
    removed: unique(removed),
    sentAt: 0,
    mid,
  };
}

/** What a member sends as it leaves: only itself removed; the receivers work out the rest. */
export function leaveAnnouncement(room: string, members: string[], owner: string, me: string, mid: string): PlainInput {
  const rest = without(members, [me]);
  return {
    type: 'members',
    room,
    owner: owner === me ? (successor(members, me) ?? me) : owner,
    members: rest,
    added: [],
    removed: [me],
    sentAt: 0,
    mid,
  };
}

/**
 * Two announcements of one room waiting to go: the later one carries the whole membership, so it
 * replaces the earlier, keeping the earlier's additions and removals that still hold (a nick
 * enters a record only when an announcement names it as added).
 */
export function mergeAnnouncements(
  earlier: MembersPlain | Omit<MembersPlain, 'v'>,
  later: Omit<MembersPlain, 'v'>,
): { added: string[]; removed: string[] } {
  const added = unique([...earlier.added, ...later.added]).filter((n) => later.members.includes(n));
  const removed = unique([...earlier.removed, ...later.removed]).filter((n) => !later.members.includes(n));
  return { added, removed };
}
