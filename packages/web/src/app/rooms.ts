/**
 * Room actions for the views, and the owner's duty: when a room owes a key rotation
 * (needsRekey, after a member left) the owner's client makes a new key for the remaining members
 * on its own, once per room at a time. "Owner" and "members" are the room's membership record
 * (the SDK's conversation/room-members.ts): a member the service lists and nobody added gets no
 * key, and a device that holds no record of the room makes none; the room shows a warning
 * instead (components/membershipalert.ts).
 */
import { isNick, isRoomName } from '@svc/protocol';
import type { Room } from '@svc/protocol';
import { isSdkError } from '@svc/sdk';
import type { Session } from './session.js';
import { describeError } from './errors.js';

const rotating = new Set<string>();

export async function rekeyOwedRooms(s: Session): Promise<void> {
  for (const room of s.m.rooms) {
    if (!room.needsRekey || !s.conv.membership.isOwner(room.id) || rotating.has(room.id)) continue;
    rotating.add(room.id);
    try {
      await s.m.rotateRoomKey(room.id);
      s.roomsChanged();
    } catch (e) {
      // The room itself says why (its warning); the rotation is tried again at the next change.
      if (isSdkError(e, 'unannounced_member') || isSdkError(e, 'no_membership_record')) continue;
      s.reportProblem(`The key of room “${room.name}” could not be rotated: ${describeError(e)}`);
    } finally {
      rotating.delete(room.id);
    }
  }
}

/** "alice, bob carol" → ["alice", "bob", "carol"]; throws with a readable message on a bad nick. */
export function parseNicks(text: string, self: string): string[] {
  const nicks = [
    ...new Set(
      text
        .split(/[\s,;]+/)
        .map((n) => n.trim().replace(/^@/, '').toLowerCase())
        .filter(Boolean),
    ),
  ];
  const bad = nicks.filter((n) => !isNick(n));
  if (bad.length > 0) throw new Error(`Not a nick: ${bad.join(', ')}. Nicks are 2 to 32 of a–z, 0–9 and _.`);
  return nicks.filter((n) => n !== self);
}

export function checkRoomName(name: string): string {
  const n = name.trim();
  if (!isRoomName(n)) throw new Error('A room name is 1 to 64 characters, not only spaces, without control characters.');
  return n;
}

export async function createRoom(s: Session, name: string, membersText: string): Promise<Room> {
  const room = await s.m.createRoom(checkRoomName(name), parseNicks(membersText, s.nick));
  s.roomsChanged();
  return room;
}

export async function addMembers(s: Session, roomId: string, text: string): Promise<void> {
  const add = parseNicks(text, s.nick);
  if (add.length === 0) return;
  await s.m.changeMembers(roomId, { add });
  s.roomsChanged();
}

export async function removeMember(s: Session, roomId: string, nick: string): Promise<void> {
  await s.m.changeMembers(roomId, { remove: [nick] });
  s.roomsChanged();
}

export async function leaveRoom(s: Session, roomId: string): Promise<void> {
  await s.m.leaveRoom(roomId);
  await s.forgetRoom(roomId);
}

export async function deleteRoom(s: Session, roomId: string): Promise<void> {
  await s.m.deleteRoom(roomId);
  await s.forgetRoom(roomId);
}
