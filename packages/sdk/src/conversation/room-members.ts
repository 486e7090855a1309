/**
 * The membership record of every room (membership-record.ts) on one device: kept through the
 * ConversationStore's meta values (sealed at rest in the web app), fed with the `members`
 * announcements that arrive and with the service's listings, and set as the Messenger's RoomGuard,
 * so that the owner's new room keys are wrapped only for recorded members and every change the
 * owner makes is announced inside the room's ciphertext.
 *
 * A nick the service lists and the record lacks shows in `status().warned` once it has stayed
 * so for `warnAfterMs`: the announcement of a change travels a moment behind the service's own
 * event, and a warning should not flash for that. Wrapping never waits: it refuses at once.
 */
import type { Room } from '@svc/protocol';
import type { Messenger } from '../client.js';
import { SdkError } from '../errors.js';
import type { ChatId, DecryptedMessage } from '../messages.js';
import type { MemberChange, RoomGuard } from '../rooms.js';
import {
  announcement,
  applyAnnouncement,
  compare,
  followOwnerGone,
  leaveAnnouncement,
  mergeAnnouncements,
  planChange,
  startRecord,
  type MembershipRecord,
} from './membership-record.js';
import type { OutboxItem } from './model.js';
import type { MembersPlain, PlainInput } from './plaintext.js';
import type { ConversationStore } from './store.js';

/** The meta key of a room's record. */
export const K_ROOM_MEMBERS = 'room-members.';

/** How long a nick stays listed and unannounced before the status warns about it, by default. */
export const WARN_AFTER_MS = 5_000;

export interface MembershipStatus {
  room: string;
  /** Whether this device holds a record of the room (it waits for an announcement otherwise). */
  recorded: boolean;
  /** The owner and the members (join order) as recorded. */
  owner: string | undefined;
  members: string[];
  /** Listed by the service, never announced: no key is wrapped for them. */
  unannounced: string[];
  /** Those of `unannounced` listed so for longer than warnAfterMs: what the app warns about. */
  warned: string[];
  /** Recorded, no longer listed (left or removed; the owner's next announcement drops them). */
  gone: string[];
  /** The service names another owner than the record. */
  ownerDisputed: boolean;
}

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
}

type MembersMessage = Extract<DecryptedMessage, { ok: true }> & { plain: MembersPlain };

export class RoomMembers implements RoomGuard {
  private readonly records = new Map<string, MembershipRecord | null>();
  /** `<room> <nick>` → when the nick was first seen listed and unannounced. */
  private readonly firstSeen = new Map<string, number>();
  private readonly timers = new Map<string, ReturnType<typeof setTimeout>>();
  private readonly listeners = new Set<(roomId: string) => void>();
  private queue: Promise<unknown> = Promise.resolve();
  private readonly warnAfterMs: number;
  private readonly now: () => number;
  private stopped = false;
  /** Rooms this account left or deleted in this session, with the keyIds they had then (rejoined()). */
  private readonly left = new Map<string, Set<string>>();

  constructor(private readonly d: RoomMembersDeps) {
    this.warnAfterMs = d.warnAfterMs ?? WARN_AFTER_MS;
    this.now = d.now ?? (() => Date.now());
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
    if (!this.records.has(roomId))
      this.records.set(roomId, ((await this.d.store.getMeta(K_ROOM_MEMBERS + roomId)) as MembershipRecord | undefined) ?? null);
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

  /** Reads the records of every listed room, so status() answers for all of them. */
  async loadAll(): Promise<void> {
    for (const r of this.d.messenger.rooms) await this.seen(r);
  }

  /** Where the room stands: from the record in memory (loaded by any listing, announcement or loadAll). */
  status(roomId: string): MembershipStatus {
    const rec = this.records.get(roomId) ?? undefined;
    const listed = this.d.messenger.room(roomId);
    const base = { room: roomId, recorded: !!rec, owner: rec?.owner, members: rec ? [...rec.members] : [] };
    if (!rec || !listed) return { ...base, unannounced: [], warned: [], gone: [], ownerDisputed: false };
    const c = compare(rec, listed);
    return { ...base, ...c, warned: this.warned(roomId, c.unannounced) };
  }

  /** Whether this account owns the room as the record and the service both say (so it rotates owed keys). */
  isOwner(roomId: string): boolean {
    const listed = this.d.messenger.room(roomId);
    const rec = this.records.get(roomId) ?? undefined;
    return listed?.owner === this.me && (rec ? rec.owner === this.me : this.madeKeys(roomId));
  }

  /**
   * Whether this account made a key of the room that this device holds: what lets a device with no
   * record start one from the service's list as the room's owner (the account's other devices made
   * the keys). A member that was only ever given keys waits for an announcement, whatever the
   * service says about who owns the room.
   */
  private madeKeys(roomId: string): boolean {
    const ring = this.d.messenger.keyring;
    return ring.keyIds(roomId).some((k) => ring.entry(roomId, k)?.from === this.me);
  }

  /** A record from the service's list, for a device of the owner that has none (trust on first use). */
  private async startFromList(room: Room): Promise<MembershipRecord | undefined> {
    if (room.owner !== this.me || !this.madeKeys(room.id)) return undefined;
    const rec = startRecord(room.id, room.owner, room.members);
    await this.save(rec);
    return rec;
  }

  /** Notes when each unannounced nick was first seen; those past the grace are warned about. */
  private warned(roomId: string, unannounced: string[]): string[] {
    const now = this.now();
    for (const key of [...this.firstSeen.keys()]) {
      if (key.startsWith(`${roomId} `) && !unannounced.includes(key.slice(roomId.length + 1))) this.firstSeen.delete(key);
    }
    const out: string[] = [];
    let wake = Infinity;
    for (const nick of unannounced) {
      const key = `${roomId} ${nick}`;
      const first = this.firstSeen.get(key) ?? now;
      this.firstSeen.set(key, first);
      if (now - first >= this.warnAfterMs) out.push(nick);
      else wake = Math.min(wake, first + this.warnAfterMs);
    }
    if (wake < Infinity && !this.timers.has(roomId) && !this.stopped) {
      const t = setTimeout(() => {
        this.timers.delete(roomId);
        this.touch(roomId);
      }, wake - now);
      this.timers.set(roomId, t);
    }
    return out;
  }

  /** Stops the warning timers (sign-out). */
  stop(): void {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }

  /** This device is out of the room (left it, removed, or the room was deleted): its record goes. */
  forget(roomId: string): Promise<void> {
    return this.serial(async () => {
      this.records.set(roomId, null);
      await this.d.store.removeMeta(K_ROOM_MEMBERS + roomId);
      this.touch(roomId);
    });
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
    this.rejoined(room);
    try {
      await this.serial(async () => {
        const rec = (await this.load(room.id)) ?? (await this.startFromList(room));
        if (!rec) return this.touch(room.id);
        const followed = followOwnerGone(rec, room, this.me);
        if (followed) {
          await this.save(followed);
          await this.payOwed(followed);
        }
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
      let rec = (await this.load(room.id)) ?? (await this.startFromList(room));
      if (rec) {
        const followed = followOwnerGone(rec, room, this.me);
        if (followed) await this.save((rec = followed));
      }
      if (!rec)
        throw new SdkError('not_owner', {
          message: 'No announcement of the room’s membership has reached this device yet, so it makes no key for the room.',
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

  /**
   * Notes the room as left, with its keys of now (rejoined()), and closes its chat in the outbox;
   * leaving goes ahead whatever becomes of that (the guard never throws).
   */
  private async close(room: Room): Promise<void> {
    this.left.set(room.id, new Set(room.keys.map((k) => k.keyId)));
    try {
      await this.d.close(`room:${room.id}`);
    } catch (e) {
      this.d.onError?.(e);
    }
  }

  stayed(room: Room): void {
    this.left.delete(room.id);
    this.d.reopen(`room:${room.id}`);
  }

  /**
   * A room this account left lists it again, under a key made after the leave: it was added
   * back, and may be written to again. A listing without such a key may be older than the leave.
   */
  private rejoined(room: Room): void {
    const keys = this.left.get(room.id);
    if (!keys || !room.members.includes(this.me) || room.keys.every((k) => keys.has(k.keyId))) return;
    this.left.delete(room.id);
    this.d.reopen(`room:${room.id}`);
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
