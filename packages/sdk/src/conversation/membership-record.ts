/**
 * A room's membership as its members announced it (docs/CRYPTO.md): the rules
 * alone, with no I/O. The service's list of members is open metadata it could change at will; the
 * record is what the room's own ciphertext said, so that a client wraps a new room key only for
 * people somebody in the room actually added, and sends only under a key its owner made.
 *
 * - A record starts on the device that creates the room, from the first announcement a member
 *   sees that names both it and its sender, sent by the owner the service lists (the announcement
 *   that added the member carries the whole membership), or from a record one of the account's
 *   own devices sends (record-transfer.ts). Never from the service's list: the only list taken
 *   from the service is that of a room whose one member is this account.
 * - Only the owner as the record knows it announces changes. A nick enters a record only through
 *   an announcement that names it in `added` (or the one the record starts from); everything else
 *   an announcement omits leaves. Announcements of one sender apply in the order of their envelope
 *   ids (a ULID the sender chose, bound by the AAD), none older than the record's start, so a
 *   replayed one changes nothing.
 * - A member announces its own leaving; it goes once the service stops listing it (until then the
 *   leave is pending and the member still counts, so a leave announced but not done blocks
 *   nothing). If it owned the room, the member who joined earliest after it, in the record's join
 *   order, owns it now (the service's rule). When the service stops listing the owner without such
 *   an announcement (the owner's account was deleted), the record follows only if the service
 *   names that same member.
 * - A nick the service lists and the record lacks is never wrapped for, and nothing is sent to
 *   the room while it is listed; the app warns about it. A recorded nick the service no longer
 *   lists gets no key either (the service would refuse it); the app warns about it too, until an
 *   announcement drops it.
 */
import { isId16, isNick, isUlid, type Room } from '@svc/protocol';
import type { MembersPlain, PlainInput } from '../wire/plaintext.js';

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
  /** Members who announced their own leaving while the service still listed them. */
  leaving?: string[];
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

const MAX_MEMBERS = 256;

/**
 * A well-formed record, copied field by field, or null: what one of the account's own devices
 * sent (record-transfer.ts) passes this before it is kept. Its owner and this account must be
 * among its members.
 */
export function parseRecord(v: unknown, me: string): MembershipRecord | null {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const o = v as Record<string, unknown>;
  const nicks = (x: unknown): x is string[] => Array.isArray(x) && x.length <= MAX_MEMBERS && x.every(isNick) && new Set(x).size === x.length;
  if (!isId16(o.room) || !isNick(o.owner) || !nicks(o.members) || !o.members.includes(o.owner) || !o.members.includes(me)) return null;
  if (o.since !== '' && !isUlid(o.since)) return null;
  if (typeof o.last !== 'object' || o.last === null || Array.isArray(o.last)) return null;
  const last = Object.entries(o.last as Record<string, unknown>);
  if (last.length > MAX_MEMBERS * 4 || !last.every(([k, id]) => isNick(k) && isUlid(id))) return null;
  if (o.leaving !== undefined && !(nicks(o.leaving) && o.leaving.every((n) => (o.members as string[]).includes(n)))) return null;
  const rec: MembershipRecord = {
    room: o.room,
    owner: o.owner,
    members: [...o.members],
    since: o.since,
    last: Object.fromEntries(last) as Record<string, string>,
  };
  if (o.leaving !== undefined && o.leaving.length > 0) rec.leaving = [...o.leaving];
  return rec;
}

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
    // Still listed: the member may not have left at all, so the leave waits for the service.
    next = a.listed?.members.includes(a.from) ? { ...rec, leaving: unique([...(rec.leaving ?? []), a.from]) } : departed(rec, a.from, a.me);
  } else {
    if (a.from !== rec.owner || p.owner !== a.from) return { ok: false, why: 'announcement not from the owner' };
    if (!p.members.includes(a.from)) return { ok: false, why: 'owner missing from its announcement' };
    const allowed = new Set([...rec.members, ...p.added]);
    next = withLeaving({ ...rec, members: unique(p.members.filter((n) => allowed.has(n))) }, rec.leaving ?? []);
  }
  next.last = { ...rec.last, [a.from]: a.id };
  return { ok: true, record: next, ...diff(rec.members, next.members) };
}

/** `nick` is gone from the record; the ownership passes on if it owned the room. */
function departed(rec: MembershipRecord, nick: string, me: string): MembershipRecord {
  const owner = nick === rec.owner ? (successor(rec.members, nick) ?? rec.owner) : rec.owner;
  const next = withLeaving({ ...rec, owner, members: without(rec.members, [nick]) }, without(rec.leaving ?? [], [nick]));
  if (owner !== rec.owner && owner === me) next.owed = true;
  return next;
}

/** The record with `leaving` set to those of `nicks` it still holds (the field is left out when none). */
function withLeaving(rec: MembershipRecord, nicks: string[]): MembershipRecord {
  const next = { ...rec };
  const still = nicks.filter((n) => rec.members.includes(n));
  if (still.length > 0) next.leaving = still;
  else delete next.leaving;
  return next;
}

/**
 * Pending leaves the service now agrees with: each member whose own leave was announced and whom
 * the service no longer lists goes. Returns null when nothing changes.
 */
export function settleLeaves(rec: MembershipRecord, listed: Room, me: string): MembershipRecord | null {
  const done = (rec.leaving ?? []).filter((n) => !listed.members.includes(n));
  if (done.length === 0) return null;
  return done.reduce((r, n) => departed(r, n, me), rec);
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
export function compare(rec: MembershipRecord, listed: Room): { unannounced: string[]; gone: string[]; leaving: string[]; ownerDisputed: boolean } {
  return {
    unannounced: without(listed.members, rec.members),
    gone: without(rec.members, listed.members),
    leaving: (rec.leaving ?? []).filter((n) => listed.members.includes(n)),
    ownerDisputed: listed.owner !== rec.owner,
  };
}

/**
 * The lines a room's log shows for a change of its record ("dave joined", "eve left"): from one
 * record to the next, never from the service's list, which could show a departure that did not
 * happen. This account's own joining and leaving are told otherwise.
 */
export function memberChanges(before: string[], after: string[], me: string): { joined: string[]; left: string[] } {
  return { joined: without(after, [...before, me]), left: without(before, [...after, me]) };
}

/** Why a message to the room must wait, or null when it may go. */
export type SendWait =
  { code: 'no_membership_record' } | { code: 'unannounced_member'; nicks: string[] } | { code: 'room_key_not_owner'; wrapper: string; owner: string };

/**
 * Whether a message may go to the room under its newest key, wrapped by `wrapper`: only with a
 * record (a device without one cannot tell who reads the room), while the service lists nobody
 * the record lacks (a listed member may be sent a key by someone, and reads what it opens), and
 * when the newest key is the recorded owner's (who wraps for recorded members only).
 */
export function sendWait(rec: MembershipRecord | undefined, listed: Room, wrapper: string | undefined): SendWait | null {
  if (!rec) return { code: 'no_membership_record' };
  const unannounced = without(listed.members, rec.members);
  if (unannounced.length > 0) return { code: 'unannounced_member', nicks: unannounced };
  if (wrapper !== undefined && wrapper !== rec.owner) return { code: 'room_key_not_owner', wrapper, owner: rec.owner };
  return null;
}

export type Plan = { ok: true; final: string[] } | { ok: false; unannounced: string[] };

/**
 * The membership a new room key is wrapped for, in the record's join order (never the service's,
 * which decides nothing here): the recorded members the service lists, then `add`, less `remove`.
 * Refused while the service lists a nick neither recorded nor named in the change (adding it, or
 * removing it, is the owner's explicit decision).
 */
export function planChange(rec: MembershipRecord, listed: Room, change: { add: string[]; remove: string[] }): Plan {
  const named = new Set([...change.add, ...change.remove]);
  const unannounced = without(listed.members, rec.members).filter((n) => !named.has(n));
  if (unannounced.length > 0) return { ok: false, unannounced };
  const stay = rec.members.filter((n) => listed.members.includes(n) && !change.remove.includes(n));
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
