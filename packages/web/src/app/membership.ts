/**
 * Membership lines in a room's log ("carol joined", "dave left", "You were removed from …") and
 * chats that became read-only: a room this account was removed from stays in the list with its
 * history until the person deletes it; a DM peer who deleted their account is found out when the
 * app loads or the chat opens, before the person tries to send.
 *
 * A member's joining or leaving is the room's membership record changing (the SDK's
 * memberChanges), never the service's list, which could show a departure that did not happen.
 * The last recorded membership per room is kept sealed in IndexedDB, so changes that happened
 * while this device was away still show as lines when it comes back.
 */
import {
  isSdkError,
  isTransferRoom,
  memberChanges,
  openAtRest,
  sealAtRest,
  type ChatId,
  type Conversations,
  type Messenger,
  type Sealed,
} from '@svc/sdk';
import type { ChatList } from './chats.js';
import { STORES, type Db } from './idb.js';

/** What the membership lines need of the signed-in session (session.ts, which holds one of these). */
export interface MembershipHost {
  readonly nick: string;
  readonly messenger: Messenger;
  readonly db: Db;
  readonly conv: Conversations;
  readonly chats: ChatList;
}

const KEY = 'members';
const CTX = 'kv|members';

export class Membership {
  private known = new Map<string, string[]>();
  private loaded = false;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly session: MembershipHost) {}

  async load(): Promise<void> {
    try {
      const row = await this.session.db.get<Sealed>(STORES.kv, KEY);
      if (row) this.known = new Map(Object.entries((await openAtRest(this.session.messenger.historyKey, row, CTX)) as Record<string, string[]>));
    } catch {
      this.known = new Map();
    }
    this.loaded = true;
  }

  private async save(): Promise<void> {
    await this.session.db.put(STORES.kv, await sealAtRest(this.session.messenger.historyKey, Object.fromEntries(this.known), CTX), KEY);
  }

  /**
   * Compares every room's members with the last seen and writes a line per change. `afterSync`:
   * the room list was just read from the service, so a known room missing from it is one this
   * account was removed from while away.
   */
  update(afterSync = false): Promise<void> {
    // One at a time: two passes over the same change would write its line twice.
    const run = this.queue.then(() => this.pass(afterSync));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async pass(afterSync: boolean): Promise<void> {
    if (!this.loaded) return;
    let dirty = false;
    if (afterSync) {
      const listed = new Set(this.session.messenger.rooms.map((r) => r.id));
      for (const id of [...this.known.keys()]) {
        if (!listed.has(id)) await this.removed(id, this.session.chats.meta(`room:${id}`)?.title ?? 'a room');
      }
    }
    for (const room of this.session.messenger.rooms) {
      // The private room of the account's devices gets no lines and no entry in the list.
      if (isTransferRoom(room, this.session.nick)) continue;
      const chat: ChatId = `room:${room.id}`;
      if (this.session.chats.meta(chat)?.left) await this.session.chats.flag(chat, { left: false, title: room.name });
      if (this.session.chats.meta(chat)?.title !== room.name) await this.session.chats.flag(chat, { title: room.name });
      const record = this.session.conv.membership.status(room.id);
      // No record yet: nothing is known that could make a line.
      if (!record.recorded) continue;
      const now = [...record.members].sort();
      const before = this.known.get(room.id);
      if (before && before.join() !== now.join()) {
        const { joined, left } = memberChanges(before, now, this.session.nick);
        for (const nick of joined) await this.session.conv.note(chat, { what: 'joined', nicks: [nick] }, `${nick} joined`);
        for (const nick of left) await this.session.conv.note(chat, { what: 'left', nicks: [nick] }, `${nick} left`);
      }
      if (!before || before.join() !== now.join()) {
        this.known.set(room.id, now);
        dirty = true;
      }
    }
    if (dirty) await this.save();
  }

  /** The service says this account is out of the room (removed, or the room was deleted). */
  async removed(roomId: string, name: string): Promise<void> {
    const chat: ChatId = `room:${roomId}`;
    // The room's membership record goes with it (a later invitation starts a new one).
    await this.session.conv.membership.forget(roomId);
    // A room this device never saw (made and gone while it was away) leaves nothing behind.
    if (!this.known.delete(roomId) && !this.session.chats.meta(chat)) return;
    await this.save();
    await this.session.chats.flag(chat, { left: true, title: name });
    await this.session.conv.note(chat, { what: 'removed', nicks: [this.session.nick] }, `You were removed from ${name}`);
  }

  /** This device left the room on purpose: nothing to keep. */
  async forget(roomId: string): Promise<void> {
    if (this.known.delete(roomId)) await this.save();
  }

  /** Marks a DM read-only when its peer's account is gone; true if it is. */
  async checkPeer(nick: string): Promise<boolean> {
    const chat: ChatId = `dm:${nick}`;
    try {
      await this.session.messenger.api.user(nick);
      if (this.session.chats.meta(chat)?.gone) await this.session.chats.flag(chat, { gone: false });
      return false;
    } catch (error) {
      if (!isSdkError(error, 'unknown_user')) return false;
      await this.session.chats.flag(chat, { gone: true });
      return true;
    }
  }

  /** DM peers who are no longer contacts (the service drops a deleted account's rows) are checked. */
  async checkPeers(contacts: Set<string>): Promise<void> {
    for (const entry of this.session.chats.list()) {
      if (entry.kind !== 'dm' || entry.closed) continue;
      const nick = entry.chat.slice(3);
      if (!contacts.has(nick)) await this.checkPeer(nick);
    }
  }
}
