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

export async function rekeyOwedRooms(session: Session): Promise<void> {
  for (const room of session.messenger.rooms) {
    if (!room.needsRekey || !session.conv.membership.isOwner(room.id) || rotating.has(room.id)) continue;
    rotating.add(room.id);
    try {
      await session.messenger.rotateRoomKey(room.id);
      session.roomsChanged();
    } catch (error) {
      // The room itself says why (its warning); the rotation is tried again at the next change.
      if (isSdkError(error, 'unannounced_member') || isSdkError(error, 'no_membership_record')) continue;
      session.reportProblem(`The key of room “${room.name}” could not be rotated: ${describeError(error)}`);
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
  const trimmed = name.trim();
  if (!isRoomName(trimmed)) throw new Error('A room name is 1 to 64 characters, not only spaces, without control characters.');
  return trimmed;
}

export async function createRoom(session: Session, name: string, membersText: string): Promise<Room> {
  const room = await session.messenger.createRoom(checkRoomName(name), parseNicks(membersText, session.nick));
  session.roomsChanged();
  return room;
}

export async function addMembers(session: Session, roomId: string, text: string): Promise<void> {
  const add = parseNicks(text, session.nick);
  if (add.length === 0) return;
  await session.messenger.changeMembers(roomId, { add });
  session.roomsChanged();
}

export async function removeMember(session: Session, roomId: string, nick: string): Promise<void> {
  await session.messenger.changeMembers(roomId, { remove: [nick] });
  session.roomsChanged();
}

export async function leaveRoom(session: Session, roomId: string): Promise<void> {
  await session.messenger.leaveRoom(roomId);
  await session.forgetRoom(roomId);
}

export async function deleteRoom(session: Session, roomId: string): Promise<void> {
  await session.messenger.deleteRoom(roomId);
  await session.forgetRoom(roomId);
}
