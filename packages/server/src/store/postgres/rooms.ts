/**
 * Room operations of the PostgreSQL store. Each function runs inside the caller's transaction.
 *
 * Every change to a room's membership or keys first takes the room row FOR UPDATE, so a members
 * change, a leave and a delete of one room run one after the other across all instances and
 * each sees the membership the previous one left. Reads that build a Room are single statements,
 * so they see one consistent snapshot.
 */
import { LIMITS, type Room, type RoomKey, type WrappedKey } from '@svc/protocol';
import type { LeaveResult, Refusal, RoomFanout } from '../types.js';
import { leave, leaveResult } from '../../rules/room-leave.js';
import type { Sql } from './db.js';
import { LOCK, liveAccounts, lockNicks } from './locks.js';

interface RoomRow {
  id: string;
  name: string;
  owner: string;
  created_at: number;
  needs_rekey: boolean;
  members: string[];
  keys?: RoomKey[];
}

const ROOM_COLS = `r.id, r.name, r.owner, r.created_at, r.needs_rekey,
  ARRAY(SELECT m2.nick FROM room_members m2 WHERE m2.room_id = r.id ORDER BY m2.seq) AS members`;

/** The wrapped keys a member still holds, oldest first, as RoomKey JSON (field order keyId, from, iv, ct). */
const KEYS_OF = (roomExpr: string, memberParam: string) => `COALESCE((
  SELECT json_agg(json_build_object('keyId', k.key_id, 'from', k.from_nick, 'iv', k.iv, 'ct', k.ct) ORDER BY k.seq)
  FROM room_keys k WHERE k.room_id = ${roomExpr} AND k.member = ${memberParam}), '[]'::json)`;

function toRoom(row: RoomRow): Room {
  return {
    id: row.id,
    name: row.name,
    owner: row.owner,
    members: row.members,
    createdAt: row.created_at,
    keys: row.keys ?? [],
    needsRekey: row.needs_rekey,
  };
}

/** The room with its members and no keys, or null. */
export async function loadRoom(q: Sql, id: string): Promise<Room | null> {
  const row = await q.one<RoomRow>(`SELECT ${ROOM_COLS} FROM rooms r WHERE r.id = $1`, [id]);
  return row ? toRoom(row) : null;
}

async function loadRoomWithKeys(q: Sql, id: string, member: string): Promise<Room> {
  const row = await q.one<RoomRow>(`SELECT ${ROOM_COLS}, ${KEYS_OF('r.id', '$2')} AS keys FROM rooms r WHERE r.id = $1`, [id, member]);
  return toRoom(row!);
}

export async function members(q: Sql, roomId: string): Promise<string[]> {
  return (await q.all<{ nick: string }>('SELECT nick FROM room_members WHERE room_id = $1 ORDER BY seq', [roomId])).map((r) => r.nick);
}

export async function isMember(q: Sql, roomId: string, nick: string): Promise<boolean> {
  return (await q.one('SELECT 1 FROM room_members WHERE room_id = $1 AND nick = $2', [roomId, nick])) !== undefined;
}

export async function devicesOf(q: Sql, nick: string): Promise<string[]> {
  return (await q.all<{ id: string }>('SELECT id FROM devices WHERE nick = $1 ORDER BY seq', [nick])).map((r) => r.id);
}

/** Devices of several accounts in one query, each list oldest first. */
async function devicesByNick(q: Sql, nicks: string[]): Promise<Map<string, string[]>> {
  const map = new Map<string, string[]>(nicks.map((n) => [n, []]));
  const rows = await q.all<{ nick: string; id: string }>('SELECT nick, id FROM devices WHERE nick = ANY($1) ORDER BY seq', [nicks]);
  for (const r of rows) map.get(r.nick)?.push(r.id);
  return map;
}

export async function listRooms(q: Sql, nick: string): Promise<Room[]> {
  const rows = await q.all<RoomRow>(
    `SELECT ${ROOM_COLS}, ${KEYS_OF('r.id', '$1')} AS keys
     FROM rooms r JOIN room_members m ON m.room_id = r.id WHERE m.nick = $1 ORDER BY r.created_at, r.id`,
    [nick],
  );
  return rows.map(toRoom);
}

async function roomCount(q: Sql, nick: string): Promise<number> {
  return (await q.one<{ n: number }>('SELECT COUNT(*) AS n FROM room_members WHERE nick = $1', [nick]))!.n;
}

/** Stores one wrapped key per member and drops what exceeds the retained number per member. */
async function storeKeys(q: Sql, roomId: string, keyId: string, from: string, keys: WrappedKey[]): Promise<void> {
  await q.run('INSERT INTO room_key_ids (room_id, key_id) VALUES ($1, $2)', [roomId, keyId]);
  if (keys.length === 0) return;
  const to = keys.map((k) => k.to);
  await q.run(
    `INSERT INTO room_keys (room_id, member, key_id, from_nick, iv, ct)
     SELECT $1, t.member, $2, $3, t.iv, t.ct FROM unnest($4::text[], $5::text[], $6::text[]) AS t(member, iv, ct)`,
    [roomId, keyId, from, to, keys.map((k) => k.iv), keys.map((k) => k.ct)],
  );
  await q.run(
    `DELETE FROM room_keys WHERE seq IN (
       SELECT seq FROM (
         SELECT seq, row_number() OVER (PARTITION BY member ORDER BY seq DESC) AS n
         FROM room_keys WHERE room_id = $1 AND member = ANY($2)) ranked
       WHERE n > $3)`,
    [roomId, to, LIMITS.keysRetainedPerMember],
  );
}

export async function createRoom(
  q: Sql,
  r: { id: string; name: string; owner: string; keyId: string; keys: WrappedKey[]; now: number },
): Promise<{ room: Room; ownerDevices: string[] } | Refusal<'room_conflict' | 'limit_reached'>> {
  if (await q.one('SELECT 1 FROM rooms WHERE id = $1', [r.id])) return { error: 'room_conflict' };
  // The owner's row is shared-locked so an account deletion running now waits and then sees the room.
  await liveAccounts(q, [r.owner]);
  await lockNicks(q, LOCK.rooms, [r.owner]);
  if ((await roomCount(q, r.owner)) >= LIMITS.roomsPerAccount) return { error: 'limit_reached' };
  // Another instance may have created the same id since the check above: its insert wins.
  const inserted = await q.run('INSERT INTO rooms (id, name, owner, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING', [
    r.id,
    r.name,
    r.owner,
    r.now,
  ]);
  if (inserted === 0) return { error: 'room_conflict' };
  await q.run('INSERT INTO room_members (room_id, nick) VALUES ($1, $2)', [r.id, r.owner]);
  await storeKeys(
    q,
    r.id,
    r.keyId,
    r.owner,
    r.keys.filter((k) => k.to === r.owner),
  );
  return { room: await loadRoomWithKeys(q, r.id, r.owner), ownerDevices: await devicesOf(q, r.owner) };
}

export async function changeMembers(
  q: Sql,
  c: { roomId: string; caller: string; add: string[]; remove: string[]; keyId: string; keys: WrappedKey[]; now: number },
): Promise<RoomFanout | Refusal<'not_owner' | 'unknown_user' | 'invalid' | 'owner' | 'key_exists' | 'keys_mismatch' | 'limit_reached'>> {
  const row = await q.one<{ owner: string }>('SELECT owner FROM rooms WHERE id = $1 FOR UPDATE', [c.roomId]);
  if (!row || row.owner !== c.caller) return { error: 'not_owner' };
  // Shared locks on the added accounts: a deletion of one of them waits, then finds the membership.
  const live = await liveAccounts(q, c.add);
  if (c.add.some((nick) => !live.has(nick))) return { error: 'unknown_user' };
  const before = await members(q, c.roomId);
  const current = new Set(before);
  if (c.remove.some((nick) => !current.has(nick))) return { error: 'invalid', field: 'remove' };
  if (c.remove.includes(row.owner)) return { error: 'owner' };
  if (await q.one('SELECT 1 FROM room_key_ids WHERE room_id = $1 AND key_id = $2', [c.roomId, c.keyId])) return { error: 'key_exists' };
  const removed = new Set(c.remove);
  const joining = [...new Set(c.add.filter((n) => !current.has(n)))];
  const final = [...before.filter((n) => !removed.has(n)), ...joining];
  const recipients = c.keys.map((k) => k.to);
  const recipientSet = new Set(recipients);
  if (recipientSet.size !== recipients.length || recipientSet.size !== final.length || !final.every((n) => recipientSet.has(n))) {
    return { error: 'keys_mismatch' };
  }
  if (final.length > LIMITS.membersPerRoom) return { error: 'limit_reached' };
  // Room counts of the joining accounts are checked under their advisory locks, so two rooms
  // adding the same account at its limit cannot both succeed.
  await lockNicks(q, LOCK.rooms, joining);
  for (const nick of joining) {
    if ((await roomCount(q, nick)) >= LIMITS.roomsPerAccount) return { error: 'limit_reached' };
  }

  if (c.remove.length > 0) {
    await q.run('DELETE FROM room_members WHERE room_id = $1 AND nick = ANY($2)', [c.roomId, c.remove]);
    await q.run('DELETE FROM room_keys WHERE room_id = $1 AND member = ANY($2)', [c.roomId, c.remove]);
  }
  // One insert each, in request order, so that join order (seq) follows the request.
  for (const nick of joining) await q.run('INSERT INTO room_members (room_id, nick) VALUES ($1, $2)', [c.roomId, nick]);
  await storeKeys(q, c.roomId, c.keyId, c.caller, c.keys);
  // A members call always carries a new key, so whatever rotation was owed is done.
  await q.run('UPDATE rooms SET needs_rekey = FALSE WHERE id = $1', [c.roomId]);

  const room = (await loadRoom(q, c.roomId))!;
  const byMember = new Map(c.keys.map((k) => [k.to, k]));
  const devices = await devicesByNick(q, [...room.members, ...c.remove]);
  return {
    room,
    members: room.members.map((nick) => {
      const k = byMember.get(nick)!;
      return { nick, devices: devices.get(nick)!, key: { keyId: c.keyId, from: c.caller, iv: k.iv, ct: k.ct } };
    }),
    removed: c.remove.map((nick) => ({ nick, devices: devices.get(nick)! })),
  };
}

/**
 * The room locked FOR UPDATE, then its members read by a second statement. A statement that
 * waited for the lock gets the room row as the transaction it waited for left it, but a subquery
 * of that same statement would still see the members as they were before the wait.
 */
async function lockRoom(q: Sql, id: string): Promise<Room | null> {
  const row = await q.one<Omit<RoomRow, 'members'>>(
    'SELECT r.id, r.name, r.owner, r.created_at, r.needs_rekey FROM rooms r WHERE r.id = $1 FOR UPDATE',
    [id],
  );
  if (!row) return null;
  return toRoom({ ...row, members: await members(q, id) });
}

/** Removes `nick` from the room as the leave rule (domain/room-leave.ts) says, and stores the outcome. */
export async function leaveRoom(q: Sql, roomId: string, nick: string): Promise<LeaveResult> {
  const callerDevices = await devicesOf(q, nick);
  const outcome = leave(await lockRoom(q, roomId), nick);
  if (outcome.kind === 'deleted') await deleteRoomRows(q, roomId);
  if (outcome.kind !== 'left') return leaveResult(roomId, outcome, callerDevices, new Map());
  await q.run('DELETE FROM room_members WHERE room_id = $1 AND nick = $2', [roomId, nick]);
  await q.run('DELETE FROM room_keys WHERE room_id = $1 AND member = $2', [roomId, nick]);
  await q.run('UPDATE rooms SET owner = $2, needs_rekey = $3 WHERE id = $1', [roomId, outcome.room.owner, outcome.room.needsRekey]);
  return leaveResult(roomId, outcome, callerDevices, await devicesByNick(q, outcome.room.members));
}

async function deleteRoomRows(q: Sql, roomId: string): Promise<void> {
  await q.run('DELETE FROM room_keys WHERE room_id = $1', [roomId]);
  await q.run('DELETE FROM room_key_ids WHERE room_id = $1', [roomId]);
  await q.run('DELETE FROM room_members WHERE room_id = $1', [roomId]);
  await q.run('DELETE FROM rooms WHERE id = $1', [roomId]);
}

export async function deleteRoom(
  q: Sql,
  roomId: string,
  nick: string,
): Promise<{ deleted: boolean; members: { nick: string; devices: string[] }[] } | Refusal<'not_owner'>> {
  const row = await q.one<{ owner: string }>('SELECT owner FROM rooms WHERE id = $1 FOR UPDATE', [roomId]);
  if (!row) return { deleted: false, members: [] };
  if (row.owner !== nick) return { error: 'not_owner' };
  const list = await members(q, roomId);
  const devices = await devicesByNick(q, list);
  await deleteRoomRows(q, roomId);
  return { deleted: true, members: list.map((m) => ({ nick: m, devices: devices.get(m)! })) };
}

/**
 * Locks every room `nick` belongs to, in id order, for account deletion: deletions of accounts
 * that share rooms then queue on the first room they share instead of each holding a room the
 * other waits for (a deadlock, which the database breaks by failing one of them).
 */
export async function lockRoomsOf(q: Sql, nick: string): Promise<void> {
  await q.run('SELECT 1 FROM rooms WHERE id IN (SELECT room_id FROM room_members WHERE nick = $1) ORDER BY id FOR UPDATE', [nick]);
}

/** Rooms `nick` belongs to, in join order, for account deletion. */
export async function roomsOf(q: Sql, nick: string): Promise<string[]> {
  return (await q.all<{ room_id: string }>('SELECT room_id FROM room_members WHERE nick = $1 ORDER BY seq', [nick])).map((r) => r.room_id);
}
