/**
 * Where a room's membership record stands against the service's list (RoomMembers.status), and
 * what a person reads about a message that waits for the record to vouch for the room.
 */
import type { SendWait } from './membership-record.js';

export interface MembershipStatus {
  room: string;
  /** Whether this device holds a record of the room (it waits for an announcement otherwise). */
  recorded: boolean;
  /** The room is listed and has had no record here for longer than warnAfterMs: what the app says. */
  missing: boolean;
  /** The owner and the members (join order) as recorded. */
  owner: string | undefined;
  members: string[];
  /** Listed by the service, never announced: no key is wrapped for them. */
  unannounced: string[];
  /** Those of `unannounced` listed so for longer than warnAfterMs: what the app warns about. */
  warned: string[];
  /** Recorded, no longer listed, and no announcement said they left (the owner's next one drops them). */
  gone: string[];
  /** Those of `gone` listed so for longer than warnAfterMs: what the app warns about. */
  goneWarned: string[];
  /** Announced their own leaving, still listed: they count as members until the service drops them. */
  leaving: string[];
  /** The service names another owner than the record. */
  ownerDisputed: boolean;
  /** Why messages to the room wait now (the outbox holds them), or null. */
  wait: SendWait | null;
}

/** What a person reads about a send that waits (the outbox's note, the app's composer). */
export function waitMessage(w: SendWait): string {
  switch (w.code) {
    case 'no_membership_record':
      return 'This device does not know yet who was added to this room, so nothing is sent there. It asks your other devices; one of them must be online.';
    case 'unannounced_member':
      return `The server lists a member nobody added (${w.nicks.join(', ')}), so nothing is sent to the room until the owner removes them or adds them.`;
    case 'room_key_not_owner':
      return `The room’s newest key was made by ${w.wrapper}, not by its owner ${w.owner}, so nothing is sent under it until ${w.owner} makes a new one.`;
  }
}
