/**
 * What leaving does to a room, by `leave` or by account deletion (docs/API.md): the
 * leaver's membership ends; an owner who leaves passes ownership to the remaining member with
 * the earliest join time; the remaining members owe a key rotation; the last member's leave
 * deletes the room.
 *
 * The rule is written here once. Each store reads the room inside its own transaction (after
 * taking whatever lock serialises changes to it), asks `leave` what follows, and stores exactly
 * that; `leaveResult` then says who must hear about it, the same way for every store.
 */
import type { Room } from '@svc/protocol';
import type { LeaveResult } from '../store/types.js';

export type LeaveOutcome =
  /** The leaver is not a member (or the room does not exist): nothing changes. */
  | { kind: 'not_member' }
  /** The leaver was the last member: the room and everything in it goes. */
  | { kind: 'deleted' }
  /** The room after the leave, `keys` empty: its owner and remaining members, needsRekey set. */
  | { kind: 'left'; room: Room };

/** `room` as stored (members in join order), or null when there is no such room. */
export function leave(room: Room | null, leaver: string): LeaveOutcome {
  if (room === null || !room.members.includes(leaver)) return { kind: 'not_member' };
  const members = room.members.filter((m) => m !== leaver);
  if (members.length === 0) return { kind: 'deleted' };
  const owner = room.owner === leaver ? members[0]! : room.owner;
  return { kind: 'left', room: { ...room, owner, members, keys: [], needsRekey: true } };
}

/**
 * Who hears about a leave: the remaining members get the room (with no key: none is new), the
 * leaver's devices get room_left. `devices` holds the devices of every remaining member.
 */
export function leaveResult(roomId: string, outcome: LeaveOutcome, callerDevices: string[], devices: ReadonlyMap<string, string[]>): LeaveResult {
  if (outcome.kind !== 'left') return { roomId, left: outcome.kind === 'deleted', deleted: outcome.kind === 'deleted', callerDevices, fanout: null };
  const { room } = outcome;
  return {
    roomId,
    left: true,
    deleted: false,
    callerDevices,
    fanout: { room, members: room.members.map((nick) => ({ nick, devices: devices.get(nick) ?? [], key: null })), removed: [] },
  };
}
