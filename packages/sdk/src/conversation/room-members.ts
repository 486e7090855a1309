/**
 * The membership record of every room (membership-record.ts) on one device: kept through the
 * ConversationStore's meta values (sealed at rest in the web app), fed with the `members`
 * announcements that arrive, the records the account's other devices send (record-transfer.ts)
 * and the service's listings, and set as the Messenger's RoomGuard, so that the owner's new room
 * keys are wrapped only for recorded members, every change the owner makes is announced inside the
 * room's ciphertext, and nothing is sent to a room whose listing the record does not vouch for.
 *
 * A difference between the record and the service's list shows in `status()` as `warned` or
 * `goneWarned` once it has lasted `warnAfterMs`: the announcement of a change travels a moment
 * behind the service's own event, and a warning should not flash for that. Wrapping and sending
 * never wait for that grace: they refuse, or hold, at once.
 */
import type { Room } from '@svc/protocol';
import type { Messenger } from '../messenger.js';
import { SdkError } from '../errors.js';
import type { ChatId, DecryptedMessage } from '../envelopes.js';
import type { MemberChange, RoomGuard } from '../rooms.js';
import { WarnClock } from './membership-clock.js';
import { waitMessage, type MembershipStatus } from './membership-status.js';
import { RoomExits } from './room-exits.js';
import {
  announcement,
  applyAnnouncement,
  compare,
  followOwnerGone,
  leaveAnnouncement,
  mergeAnnouncements,
  planChange,
  sendWait,
  settleLeaves,
  startRecord,
  type MembershipRecord,
} from './membership-record.js';
import type { OutboxItem } from './model.js';
import type { MembersPlain, PlainInput } from '../wire/plaintext.js';
import type { ConversationStore } from './store.js';

/** The meta key of a room's record. */
export const K_ROOM_MEMBERS = 'room-members.';

/** How long a nick stays listed and unannounced before the status warns about it, by default. */
export const WARN_AFTER_MS = 5_000;

export interface RoomMembersDeps {
  messenger: Messenger;
  store: ConversationStore;
  /** Queues an announcement in the outbox under envelope id `id`. */
  enqueue(chat: ChatId, plain: PlainInput, id: string): Promise<OutboxItem>;
  /** What waits in the outbox, and how to take an item out (a superseded announcement). */
  pending(): readonly OutboxItem[];
  drop(id: string): Promise<void>;
  /** Nothing more goes to `chat` (the outbox drops what waits for it); resolves once a send to it under way has ended. */
  close(chat: ChatId): Promise<void>;
  /** `chat` may be written to again: the leave did not happen. */
  reopen(chat: ChatId): void;
  newMid(): string;
  warnAfterMs?: number;
  now?: () => number;
  /** Told about what failed in the background (a listing's record could not be stored, a leave announcement did not go). */
  onError?: (e: unknown) => void;
  /** A listed room has no record on this device: the account's other devices are asked for theirs. */
  missing?: (roomId: string) => void;
}

type MembersMessage = Extract<DecryptedMessage, { ok: true }> & { plain: MembersPlain };

export class RoomMembers implements RoomGuard {
  private readonly records = new Map<string, MembershipRecord | null>();
  private readonly listeners = new Set<(roomId: string) => void>();
  private queue: Promise<unknown> = Promise.resolve();
  private readonly clock: WarnClock;
  private readonly exits: RoomExits;

  constructor(private readonly d: RoomMembersDeps) {
    this.exits = new RoomExits(
      () => this.me,
      (chat) => d.close(chat),
      (chat) => d.reopen(chat),
    );
    this.clock = new WarnClock(d.warnAfterMs ?? WARN_AFTER_MS, d.now ?? (() => Date.now()), (roomId) => this.touch(roomId));
  }

  private get me(): string {
    return this.d.messenger.nick;
  }

  /** Called when a room's status may have changed. */
  on(f: (roomId: string) => void): () => void {
    this.listeners.add(f);
    return () => this.listeners.delete(f);
  }

  private emit(roomId: string): void {
    for (const f of this.listeners) f(roomId);
  }

  /** The room's status may have changed: the warning clock starts for newly unannounced nicks, and listeners hear of it. */
  private touch(roomId: string): void {
    this.status(roomId);
    this.emit(roomId);
  }

  /** One change at a time: announcements, listings and the owner's actions interleave. */
  private serial<T>(f: () => Promise<T>): Promise<T> {
    const run = this.queue.then(f, f);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async load(roomId: string): Promise<MembershipRecord | undefined> {
    if (!this.records.has(roomId)) {
      const stored = ((await this.d.store.getMeta(K_ROOM_MEMBERS + roomId)) as MembershipRecord | undefined) ?? null;
      // A save may have come meanwhile (load is also called outside the serial queue).
      if (!this.records.has(roomId)) this.records.set(roomId, stored);
    }
    return this.records.get(roomId) ?? undefined;
  }

  private async save(rec: MembershipRecord): Promise<void> {
    await this.d.store.putMeta(K_ROOM_MEMBERS + rec.room, rec);
    this.records.set(rec.room, rec);
  }

  /** The record as kept (after a reload it is read from the store). */
  record(roomId: string): Promise<MembershipRecord | undefined> {
    return this.serial(() => this.load(roomId));
  }

  /** The records of every listed room this device holds (what it sends a new device of the account). */
  held(): Promise<MembershipRecord[]> {
    return this.serial(async () => {
      const out: MembershipRecord[] = [];
      for (const r of this.d.messenger.rooms) {
        const rec = await this.load(r.id);
        if (rec) out.push(rec);
      }
      return out;
    });
  }

  /** The listed rooms this device holds no record of (a room of this account alone gets one at once). */
  lacking(): Promise<string[]> {
    return this.serial(async () => {
      const out: string[] = [];
      for (const r of this.d.messenger.rooms) if (!((await this.load(r.id)) ?? (await this.startAlone(r)))) out.push(r.id);
      return out;
    });
  }

  /**
   * A record one of the account's own devices sent (record-transfer.ts, checked by parseRecord):
   * kept only for a listed room that has none here, since an announcement taken since is newer.
   * False when it was not kept.
   */
  adopt(rec: MembershipRecord): Promise<boolean> {
    return this.serial(async () => {
      const room = this.d.messenger.room(rec.room);
      if (!room || (await this.load(rec.room))) return false;
      // Ownership that passed to this account is announced by the device that took it.
      const kept = { ...rec };
      delete kept.owed;
      await this.save(kept);
      await this.follow(kept, room);
      this.touch(rec.room);
      return true;
    });
  }

  /**
   * Whether a message may go to the room under a key `wrapper` made (Messenger sends call it):
   * SdkError `no_membership_record`, `unannounced_member` or `room_key_not_owner` when it must
   * wait (the outbox holds it until the status clears). Outside the serial queue: a send may
   * be under way while a listing is taken in.
   */
  async checkSend(room: Room, wrapper: string): Promise<void> {
    const rec = (await this.load(room.id)) ?? (await this.serial(async () => (await this.load(room.id)) ?? this.startAlone(room)));
    const w = sendWait(rec, room, wrapper);
    if (w) throw new SdkError(w.code, { message: waitMessage(w) });
  }

  /** Reads the records of every listed room, so status() answers for all of them. */
  async loadAll(): Promise<void> {
    for (const r of this.d.messenger.rooms) await this.seen(r);
  }

  /** Where the room stands: from the record in memory (loaded by any listing, announcement or loadAll). */
  status(roomId: string): MembershipStatus {
    const rec = this.records.get(roomId) ?? undefined;
    const listed = this.d.messenger.room(roomId);
    const base = { room: roomId, recorded: !!rec, owner: rec?.owner, members: rec ? [...rec.members] : [] };
    const wait = listed ? sendWait(rec, listed, this.wrapper(roomId)) : null;
    const missing = this.clock.aged('record', roomId, listed && !rec ? [this.me] : []).length > 0;
    if (!rec || !listed) return { ...base, missing, unannounced: [], warned: [], gone: [], goneWarned: [], leaving: [], ownerDisputed: false, wait };
    const c = compare(rec, listed);
    return {
      ...base,
      ...c,
      missing,
      warned: this.clock.aged('listed', roomId, c.unannounced),
      goneWarned: this.clock.aged('gone', roomId, c.gone),
      wait,
    };
  }

  /** Who wrapped the room's newest key, as this device holds it. */
  private wrapper(roomId: string): string | undefined {
    const keyId = this.d.messenger.roomKeyId(roomId);
    return keyId === undefined ? undefined : this.d.messenger.keyring.entry(roomId, keyId)?.from;
  }

  /** Whether this account owns the room as the record and the service both say (so it rotates owed keys). */
  isOwner(roomId: string): boolean {
    const listed = this.d.messenger.room(roomId);
    const rec = this.records.get(roomId) ?? undefined;
    return listed?.owner === this.me && rec?.owner === this.me;
  }

  /**
   * The one record taken from the service's list: a room whose only member and owner is this
   * account (its private room of its devices, or a room not shared yet) names nobody else, so
   * nobody else gets a key from it.
   */
  private async startAlone(room: Room): Promise<MembershipRecord | undefined> {
    if (room.owner !== this.me || room.members.length !== 1 || room.members[0] !== this.me) return undefined;
    const rec = startRecord(room.id, this.me, [this.me]);
    await this.save(rec);
    return rec;
  }

  /** The record brought up to date with a listing: pending leaves the service agrees with, an owner gone unannounced. */
  private async follow(rec: MembershipRecord, room: Room): Promise<MembershipRecord> {
    const settled = settleLeaves(rec, room, this.me);
    const followed = followOwnerGone(settled ?? rec, room, this.me);
    const next = followed ?? settled;
    if (!next) return rec;
    await this.save(next);
    await this.payOwed(next);
    return next;
  }

  /** Stops the warning timers (sign-out). */
  stop(): void {
    this.clock.stop();
  }

  /** This device is out of the room (left it, removed, or the room was deleted): its record goes. */
  forget(roomId: string): Promise<void> {
    return this.serial(async () => {
      await this.drop(roomId);
      this.touch(roomId);
    });
  }

  private async drop(roomId: string): Promise<void> {
    this.records.set(roomId, null);
    await this.d.store.removeMeta(K_ROOM_MEMBERS + roomId);
  }

  // ---- what arrives ----

  /** A `members` announcement that arrived in a room; false when it was refused (it is then ignored). */
  take(m: MembersMessage): Promise<boolean> {
    return this.serial(async () => {
      const room = m.chat.startsWith('room:') ? m.chat.slice(5) : null;
      if (!room) return false;
      const r = applyAnnouncement(await this.load(room), { id: m.id, from: m.from, room, me: this.me, listed: this.d.messenger.room(room) }, m.plain);
      if (!r.ok) return false;
      await this.save(r.record);
      await this.payOwed(r.record);
      this.touch(room);
      return true;
    });
  }

  async seen(room: Room): Promise<void> {
    const back = this.exits.rejoined(room);
    try {
      await this.serial(async () => {
        // Added back after leaving: the record of before is stale; the announcement that added this account starts the new one.
        if (back) await this.drop(room.id);
        const rec = (await this.load(room.id)) ?? (await this.startAlone(room));
        if (rec) await this.follow(rec, room);
        else this.d.missing?.(room.id);
        this.touch(room.id);
      });
    } catch (e) {
      // The next listing tries again; the listing itself must not fail for the record's sake.
      this.d.onError?.(e);
    }
  }

  // ---- what the owner does (RoomGuard) ----

  recipients(room: Room, change: MemberChange): Promise<string[]> {
    return this.serial(async () => {
      let rec = (await this.load(room.id)) ?? (await this.startAlone(room));
      if (rec) rec = await this.follow(rec, room);
      else if (room.owner === this.me) {
        // No record, but the person names everyone the service lists: their own decision, as
        // for a member nobody added. Nothing is taken from the list unasked.
        const plan = planChange(startRecord(room.id, this.me, [this.me]), room, change);
        if (plan.ok) return plan.final;
      }
      if (!rec)
        throw new SdkError('no_membership_record', {
          message:
            'This device holds no record of who was added to this room yet, so it makes no room key. It gets one from your other devices, or from the owner’s next announcement.',
        });
      if (rec.owner !== this.me)
        throw new SdkError('not_owner', {
          message: `This device’s record of the room names ${rec.owner} as its owner, so it makes no key for the room.`,
        });
      const plan = planChange(rec, room, change);
      if (!plan.ok) {
        this.touch(room.id);
        throw new SdkError('unannounced_member', {
          message: `The server lists a member nobody added (${plan.unannounced.join(', ')}), so no room key was made. Remove them, or add them yourself if you mean to.`,
        });
      }
      return plan.final;
    });
  }

  changed(room: Room, _change: MemberChange, final: string[]): Promise<void> {
    return this.serial(async () => {
      const before = (await this.load(room.id)) ?? startRecord(room.id, this.me, [this.me]);
      const rec: MembershipRecord = { ...before, owner: this.me, members: [...final] };
      delete rec.owed;
      await this.announce(
        rec,
        final.filter((n) => !before.members.includes(n)),
        before.members.filter((n) => !final.includes(n)),
      );
      this.touch(room.id);
    });
  }

  created(room: Room, alone: boolean): Promise<void> {
    return this.serial(async () => {
      const rec = startRecord(room.id, this.me, [this.me]);
      if (alone) await this.announce(rec, [], []);
      else await this.save(rec);
    });
  }

  async leaving(room: Room): Promise<void> {
    // First the outbox: a receipt or message for the room sent after the leave would come back
    // refused (not_member), an error this client can foresee. The announcement below is not
    // queued, so it still goes.
    await this.close(room);
    try {
      const rec = await this.record(room.id);
      const plain = leaveAnnouncement(room.id, rec?.members ?? room.members, rec?.owner ?? room.owner, this.me, this.d.newMid());
      // Sent now, not queued: once the service has taken the leave this account cannot send here.
      // Outside the serial queue, since sending may read the rooms again, which comes back here.
      await this.d.messenger.send(`room:${room.id}`, plain);
    } catch (e) {
      // Leaving goes ahead: the owner's next announcement drops this account all the same.
      this.d.onError?.(e);
    }
  }

  deleting(room: Room): Promise<void> {
    return this.close(room);
  }

  private async close(room: Room): Promise<void> {
    try {
      await this.exits.close(room);
    } catch (e) {
      this.d.onError?.(e);
    }
  }

  stayed(room: Room): void {
    this.exits.stayed(room);
  }

  /** Ownership passed to this account: it announces the membership as it took it over. */
  private async payOwed(rec: MembershipRecord): Promise<void> {
    if (!rec.owed || rec.owner !== this.me) return;
    const next = { ...rec };
    delete next.owed;
    await this.announce(next, [], []);
  }

  /**
   * Saves the record, then queues its announcement (a crash in between leaves the others' records
   * behind, which only makes them warn, never this device's wrapping wrong). An announcement that
   * still waits for this room is replaced: the new one carries the whole membership and the
   * additions and removals of both.
   */
  private async announce(rec: MembershipRecord, added: string[], removed: string[]): Promise<void> {
    const chat: ChatId = `room:${rec.room}`;
    const id = this.d.messenger.api.newId();
    await this.save({ ...rec, last: { ...rec.last, [this.me]: id } });
    let plain = announcement(rec, added, removed, this.d.newMid());
    for (const item of [...this.d.pending()]) {
      if (item.chat !== chat || item.plain.type !== 'members' || plain.type !== 'members') continue;
      plain = { ...plain, ...mergeAnnouncements(item.plain, plain) };
      await this.d.drop(item.id);
    }
    await this.d.enqueue(chat, plain, id);
  }
}
