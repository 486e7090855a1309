/** Room operations of the SQLite store. Each function runs inside the caller's transaction. */
import { LIMITS, type Room, type RoomKey, type WrappedKey } from '@svc/protocol';
import type { LeaveResult, Refusal, RoomFanout } from '../types.js';
import { leave, leaveResult } from '../../rules/room-leave.js';
import type { Statements } from './statements.js';

interface RoomRow {
  id: string;
  name: string;
  owner: string;
  created_at: number;
  needs_rekey: number;
}

export function loadRoom(q: Statements, id: string): Room | null {
  const row = q.one<RoomRow>('SELECT id, name, owner, created_at, needs_rekey FROM rooms WHERE id = ?', id);
  if (!row) return null;
  return toRoom(row, members(q, id));
}

function toRoom(row: RoomRow, memberList: string[]): Room {
  return {
    id: row.id,
    name: row.name,
    owner: row.owner,
    members: memberList,
    createdAt: row.created_at,
    keys: [],
    needsRekey: row.needs_rekey === 1,
  };
}

export function members(q: Statements, roomId: string): string[] {
  return q.all<{ nick: string }>('SELECT nick FROM room_members WHERE room_id = ? ORDER BY seq', roomId).map((r) => r.nick);
}

export function isMember(q: Statements, roomId: string, nick: string): boolean {
  return q.one('SELECT 1 FROM room_members WHERE room_id = ? AND nick = ?', roomId, nick) !== undefined;
}

export function devicesOf(q: Statements, nick: string): string[] {
  return q.all<{ id: string }>('SELECT id FROM devices WHERE nick = ? ORDER BY seq', nick).map((r) => r.id);
}

function keysFor(q: Statements, roomId: string, member: string): RoomKey[] {
  return q.all<RoomKey>(
    'SELECT key_id AS keyId, from_nick AS "from", iv, ct FROM room_keys WHERE room_id = ? AND member = ? ORDER BY seq',
    roomId,
    member,
  );
}

export function listRooms(q: Statements, nick: string): Room[] {
  const rows = q.all<RoomRow>(
    `SELECT r.id, r.name, r.owner, r.created_at, r.needs_rekey FROM rooms r
     JOIN room_members m ON m.room_id = r.id WHERE m.nick = ? ORDER BY r.created_at, r.id`,
    nick,
  );
  return rows.map((row) => ({ ...toRoom(row, members(q, row.id)), keys: keysFor(q, row.id, nick) }));
}

function roomCount(q: Statements, nick: string): number {
  return q.one<{ n: number }>('SELECT COUNT(*) AS n FROM room_members WHERE nick = ?', nick)!.n;
}

/** Stores one wrapped key per member and drops what exceeds the retained number per member. */
function storeKeys(q: Statements, roomId: string, keyId: string, from: string, keys: WrappedKey[]): void {
  q.run('INSERT INTO room_key_ids (room_id, key_id) VALUES (?, ?)', roomId, keyId);
  for (const k of keys) {
    q.run('INSERT INTO room_keys (room_id, member, key_id, from_nick, iv, ct) VALUES (?, ?, ?, ?, ?, ?)', roomId, k.to, keyId, from, k.iv, k.ct);
    q.run(
      `DELETE FROM room_keys WHERE room_id = ? AND member = ? AND seq <= (
         SELECT seq FROM room_keys WHERE room_id = ? AND member = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)`,
      roomId,
      k.to,
      roomId,
      k.to,
      LIMITS.keysRetainedPerMember,
    );
  }
}

export function createRoom(
  q: Statements,
  r: { id: string; name: string; owner: string; keyId: string; keys: WrappedKey[]; now: number },
): { room: Room; ownerDevices: string[] } | Refusal<'room_conflict' | 'limit_reached'> {
  if (q.one('SELECT 1 FROM rooms WHERE id = ?', r.id)) return { error: 'room_conflict' };
  if (roomCount(q, r.owner) >= LIMITS.roomsPerAccount) return { error: 'limit_reached' };
  q.run('INSERT INTO rooms (id, name, owner, created_at) VALUES (?, ?, ?, ?)', r.id, r.name, r.owner, r.now);
  q.run('INSERT INTO room_members (room_id, nick) VALUES (?, ?)', r.id, r.owner);
  const own = r.keys.filter((k) => k.to === r.owner);
  storeKeys(q, r.id, r.keyId, r.owner, own);
  const room = loadRoom(q, r.id)!;
  room.keys = keysFor(q, r.id, r.owner);
  return { room, ownerDevices: devicesOf(q, r.owner) };
}

export function changeMembers(
  q: Statements,
  c: { roomId: string; caller: string; add: string[]; remove: string[]; keyId: string; keys: WrappedKey[]; now: number },
): RoomFanout | Refusal<'not_owner' | 'unknown_user' | 'invalid' | 'owner' | 'key_exists' | 'keys_mismatch' | 'limit_reached'> {
  const row = q.one<{ owner: string }>('SELECT owner FROM rooms WHERE id = ?', c.roomId);
  if (!row || row.owner !== c.caller) return { error: 'not_owner' };
  for (const nick of c.add) {
    if (!q.one('SELECT 1 FROM accounts WHERE nick = ? AND deleted_at IS NULL', nick)) return { error: 'unknown_user' };
  }
  const before = members(q, c.roomId);
  const current = new Set(before);
  for (const nick of c.remove) if (!current.has(nick)) return { error: 'invalid', field: 'remove' };
  if (c.remove.includes(row.owner)) return { error: 'owner' };
  if (q.one('SELECT 1 FROM room_key_ids WHERE room_id = ? AND key_id = ?', c.roomId, c.keyId)) return { error: 'key_exists' };
  const removed = new Set(c.remove);
  const final = [...before.filter((n) => !removed.has(n)), ...c.add.filter((n) => !current.has(n))];
  const recipients = c.keys.map((k) => k.to);
  const recipientSet = new Set(recipients);
  if (recipientSet.size !== recipients.length || recipientSet.size !== final.length || !final.every((n) => recipientSet.has(n))) {
    return { error: 'keys_mismatch' };
  }
  if (final.length > LIMITS.membersPerRoom) return { error: 'limit_reached' };
  for (const nick of c.add) {
    if (!current.has(nick) && roomCount(q, nick) >= LIMITS.roomsPerAccount) return { error: 'limit_reached' };
  }

  for (const nick of c.remove) {
    q.run('DELETE FROM room_members WHERE room_id = ? AND nick = ?', c.roomId, nick);
    q.run('DELETE FROM room_keys WHERE room_id = ? AND member = ?', c.roomId, nick);
  }
  for (const nick of c.add) {
    if (!current.has(nick)) q.run('INSERT INTO room_members (room_id, nick) VALUES (?, ?)', c.roomId, nick);
  }
  storeKeys(q, c.roomId, c.keyId, c.caller, c.keys);
  // A members call always carries a new key, so whatever rotation was owed is done.
  q.run('UPDATE rooms SET needs_rekey = 0 WHERE id = ?', c.roomId);

  const room = loadRoom(q, c.roomId)!;
  const byMember = new Map(c.keys.map((k) => [k.to, k]));
  return {
    room,
    members: room.members.map((nick) => {
      const k = byMember.get(nick)!;
      return { nick, devices: devicesOf(q, nick), key: { keyId: c.keyId, from: c.caller, iv: k.iv, ct: k.ct } };
    }),
    removed: c.remove.map((nick) => ({ nick, devices: devicesOf(q, nick) })),
  };
}

/** Removes `nick` from the room as the leave rule (domain/room-leave.ts) says, and stores the outcome. */
export function leaveRoom(q: Statements, roomId: string, nick: string): LeaveResult {
  const callerDevices = devicesOf(q, nick);
  const outcome = leave(loadRoom(q, roomId), nick);
  if (outcome.kind === 'deleted') deleteRoomRows(q, roomId);
  if (outcome.kind !== 'left') return leaveResult(roomId, outcome, callerDevices, new Map());
  q.run('DELETE FROM room_members WHERE room_id = ? AND nick = ?', roomId, nick);
  q.run('DELETE FROM room_keys WHERE room_id = ? AND member = ?', roomId, nick);
  q.run('UPDATE rooms SET owner = ?, needs_rekey = ? WHERE id = ?', outcome.room.owner, outcome.room.needsRekey ? 1 : 0, roomId);
  const devices = new Map(outcome.room.members.map((m) => [m, devicesOf(q, m)]));
  return leaveResult(roomId, outcome, callerDevices, devices);
}

function deleteRoomRows(q: Statements, roomId: string): void {
  q.run('DELETE FROM room_keys WHERE room_id = ?', roomId);
  q.run('DELETE FROM room_key_ids WHERE room_id = ?', roomId);
  q.run('DELETE FROM room_members WHERE room_id = ?', roomId);
  q.run('DELETE FROM rooms WHERE id = ?', roomId);
}

export function deleteRoom(
  q: Statements,
  roomId: string,
  nick: string,
): { deleted: boolean; members: { nick: string; devices: string[] }[] } | Refusal<'not_owner'> {
  const row = q.one<{ owner: string }>('SELECT owner FROM rooms WHERE id = ?', roomId);
  if (!row) return { deleted: false, members: [] };
  if (row.owner !== nick) return { error: 'not_owner' };
  const list = members(q, roomId).map((m) => ({ nick: m, devices: devicesOf(q, m) }));
  deleteRoomRows(q, roomId);
  return { deleted: true, members: list };
}

/** Rooms `nick` belongs to, for account deletion. */
export function roomsOf(q: Statements, nick: string): string[] {
  return q.all<{ room_id: string }>('SELECT room_id FROM room_members WHERE nick = ? ORDER BY seq', nick).map((r) => r.room_id);
}
