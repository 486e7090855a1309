/**
 * The rooms this account is leaving or deleting in this session (RoomMembers, as the room guard):
 * their chats are closed in the outbox first, so nothing goes there after the leave, and opened
 * again if the leave does not happen or the account is added back.
 */
import type { Room } from '@svc/protocol';
import type { ChatId } from '../envelopes.js';

export class RoomExits {
  /** Rooms left or deleted, with the keyIds they had then (rejoined()). */
  private readonly left = new Map<string, Set<string>>();

  constructor(
    private readonly me: () => string,
    private readonly closeChat: (chat: ChatId) => Promise<void>,
    private readonly reopen: (chat: ChatId) => void,
  ) {}

  /** Notes the room as left, with its keys of now, and closes its chat in the outbox. */
  close(room: Room): Promise<void> {
    this.left.set(room.id, new Set(room.keys.map((k) => k.keyId)));
    return this.closeChat(`room:${room.id}`);
  }

  /** The leave or deletion did not happen (its request failed). */
  stayed(room: Room): void {
    this.left.delete(room.id);
    this.reopen(`room:${room.id}`);
  }

  /**
   * A room this account left lists it again, under a key made after the leave: it was added
   * back, and may be written to again (true). A listing without such a key may be older than the leave.
   */
  rejoined(room: Room): boolean {
    const keys = this.left.get(room.id);
    if (!keys || !room.members.includes(this.me()) || room.keys.every((k) => keys.has(k.keyId))) return false;
    this.left.delete(room.id);
    this.reopen(`room:${room.id}`);
    return true;
  }
}
