/**
 * Rooms as one signed-in account sees them: the rooms the service lists, the room keys this
 * client unwrapped (RoomKeyring), which key is each room's newest, and the owner's actions that
 * make a new key for every membership change. Whom a new key is wrapped for is the RoomGuard's
 * call when one is set (the conversation layer's membership record, conversation/room-members.ts);
 * without one, the service's list decides.
 */
import type { Room, RoomKey } from '@svc/protocol';
import type { ApiClient } from './api.js';
import { b64, randomBytes } from './bytes.js';
import { importRoomKey, newRoomKey, unwrapRoomKey, wrapRoomKey } from './crypto/roomkey.js';
import { SdkError } from './errors.js';
import { RoomKeyring } from './keyring.js';
import type { Peers } from './peers.js';

export interface RoomBookOptions {
  api: ApiClient;
  peers: Peers;
  me: { nick: string; publicKey: string };
  /** Told about room keys that could not be unwrapped (a wrapper's key changed or is gone). */
  onKeyError?: ((roomId: string, keyId: string, error: unknown) => void) | undefined;
  /** The guard in force now (it is set after sign-in, by the conversation layer). */
  guard?: () => RoomGuard | null;
}

export interface MemberChange {
  add: string[];
  remove: string[];
}

/**
 * Decides whom the owner's new room keys are wrapped for, instead of the service's list of
 * members, and hears of every room listing and change (docs/CRYPTO.md).
 */
export interface RoomGuard {
  /** A listing of the room came (an event, GET /api/rooms, an answer). Never throws. */
  seen(room: Room): Promise<void>;
  /** The final membership, in join order, that the new key of `change` is wrapped for; throws to refuse. */
  recipients(room: Room, change: MemberChange): Promise<string[]>;
  /** The service took `change`, with a key wrapped for `final`. */
  changed(room: Room, change: MemberChange, final: string[]): Promise<void>;
  /** This account created `room`; `alone`: no members are added right after. */
  created(room: Room, alone: boolean): Promise<void>;
  /** This account is about to leave `room`: nothing more may be sent there once it has. Never throws. */
  leaving(room: Room): Promise<void>;
  /** This account (its owner) is about to delete `room`. Never throws. */
  deleting(room: Room): Promise<void>;
  /** The leave or deletion announced by `leaving` or `deleting` did not happen (its request failed). */
  stayed(room: Room): void;
  /** A message is about to go to `room` under a key `wrapper` made; throws when it must wait. */
  checkSend(room: Room, wrapper: string): Promise<void>;
}

export class RoomBook {
  readonly keyring = new RoomKeyring();
  private cache = new Map<string, Room>();
  /** Per room: the newest keyId as the service lists it, and the tick when that was learnt (noteNewest). */
  private newestKeys = new Map<string, { keyId: string; at: number }>();
  /** Per room: every keyId the service has listed to this client, to tell a stale listing. */
  private listedKeys = new Map<string, Set<string>>();
  /** Counts room requests and events, to tell which of two answers was asked for later. */
  private tick = 0;

  constructor(private readonly o: RoomBookOptions) {}

  private get guard(): RoomGuard | null {
    return this.o.guard?.() ?? null;
  }

  get list(): Room[] {
    return [...this.cache.values()];
  }

  get(roomId: string): Room | undefined {
    return this.cache.get(roomId);
  }

  /** Re-reads GET /api/rooms and unwraps every key not held yet. Call after each `ready`. */
  async sync(): Promise<Room[]> {
    const asked = ++this.tick;
    const rooms = await this.o.api.rooms();
    const seen = new Set<string>();
    for (const r of rooms) {
      seen.add(r.id);
      await this.take(r, asked);
    }
    for (const id of [...this.cache.keys()]) {
      // A room whose event came after this request was sent is newer than this answer.
      if (!seen.has(id) && !((this.newestKeys.get(id)?.at ?? 0) > asked)) this.drop(id);
    }
    return rooms;
  }

  /** Takes in a Room (from a `room` event or a response): keeps it and unwraps its keys. */
  apply(room: Room): Promise<void> {
    return this.take(room, ++this.tick);
  }

  /** `asked`: the tick when the request that answered `room` was sent (or the event came). */
  private async take(room: Room, asked: number): Promise<void> {
    this.cache.set(room.id, room);
    this.noteNewest(room, asked);
    for (const k of room.keys) {
      if (this.keyring.has(room.id, k.keyId)) continue;
      try {
        const u = await this.unwrap(room.id, k);
        this.keyring.add(room.id, k.keyId, u.key, { from: k.from, publicKey: u.publicKey });
      } catch (e) {
        this.o.onKeyError?.(room.id, k.keyId, e);
      }
    }
    await this.guard?.seen(room);
  }

  /**
   * Records the room's newest key from a listing of its keys (oldest first; every source lists
   * them so). The service only appends keys for a member, drops the oldest past 64, and drops all
   * of a removed member's keys. So a listing whose last key was listed before is not newer than
   * what is known (a late event, or an answer overtaken by another); one that holds the known
   * newest key and goes past it is newer; one that lacks it is newer only if it was asked for
   * after that key was learnt (the member was removed and added again), otherwise it predates it
   * (GET /api/rooms answered before a rotation whose event came first). `keys: []` (a member
   * left) brings no key.
   */
  private noteNewest(room: Room, asked: number): void {
    const last = room.keys.at(-1);
    if (!last) return;
    let listed = this.listedKeys.get(room.id);
    if (!listed) this.listedKeys.set(room.id, (listed = new Set()));
    const cur = this.newestKeys.get(room.id);
    const newer = !cur || (!listed.has(last.keyId) && (room.keys.some((k) => k.keyId === cur.keyId) || cur.at < asked));
    for (const k of room.keys) listed.add(k.keyId);
    if (newer) this.newestKeys.set(room.id, { keyId: last.keyId, at: Math.max(asked, cur?.at ?? 0) });
  }

  /** Unwraps with the pair key of the wrapper's key as the service shows it now (checked for `receive`). */
  private async unwrap(roomId: string, k: RoomKey): Promise<{ key: CryptoKey; publicKey: string }> {
    const { pair, publicKey } = await this.o.peers.pairAndKey(k.from, 'receive');
    return { key: await unwrapRoomKey(pair, roomId, k.keyId, this.o.me.nick, k), publicKey };
  }

  /** Forgets a room (not its keys, so that stored envelopes still open). */
  drop(roomId: string): void {
    this.cache.delete(roomId);
    this.newestKeys.delete(roomId);
    this.listedKeys.delete(roomId);
  }

  /**
   * The keyId sending uses: the room's newest key as the service lists it (GET /api/rooms, `room`
   * events and room responses list keys oldest first). Undefined while no key is listed.
   */
  newestKeyId(roomId: string): string | undefined {
    return this.newestKeys.get(roomId)?.keyId;
  }

  /** The room's newest key with its origin, if this client holds it. */
  sendKey(roomId: string): { keyId: string; key: CryptoKey; from: string; publicKey: string } | undefined {
    const keyId = this.newestKeyId(roomId);
    const held = keyId === undefined ? undefined : this.keyring.entry(roomId, keyId);
    return keyId !== undefined && held ? { keyId, ...held } : undefined;
  }

  /** Whether a message may go to the room under a key `wrapper` made: the guard's call (none without one). */
  async checkSend(roomId: string, wrapper: string): Promise<void> {
    const room = this.cache.get(roomId);
    if (room) await this.guard?.checkSend(room, wrapper);
  }

  /** Creates a room owned by this account, then adds `members` (with a fresh key for all) when given. */
  async create(name: string, members: string[] = []): Promise<Room> {
    const me = this.o.me;
    const id = b64(randomBytes(16));
    const rk = newRoomKey();
    const own = await wrapRoomKey(await this.o.peers.pair(me.nick, 'send'), id, rk.keyId, me.nick, rk.key);
    const asked = ++this.tick;
    const room = await this.o.api.createRoom({ id, name, keyId: rk.keyId, keys: [own] });
    this.keyring.add(id, rk.keyId, await importRoomKey(rk.key), { from: me.nick, publicKey: me.publicKey });
    rk.key.fill(0);
    const others = members.filter((m) => m !== me.nick);
    // The newest key is known before the guard queues an announcement, which goes under it.
    await this.take(room, asked);
    await this.guard?.created(room, others.length === 0);
    return others.length > 0 ? this.changeMembers(id, { add: others }) : room;
  }

  /**
   * Adds and removes members (owner only), always with a new room key wrapped for the final
   * membership, so removed members cannot read what follows and added ones cannot read what came before.
   */
  async changeMembers(roomId: string, change: { add?: string[]; remove?: string[] }): Promise<Room> {
    const me = this.o.me;
    const add = [...new Set(change.add ?? [])];
    const remove = [...new Set(change.remove ?? [])];
    let room = this.cache.get(roomId);
    if (!room) {
      await this.sync();
      room = this.cache.get(roomId);
      if (!room) throw new SdkError('not_member');
    }
    const guard = this.guard;
    const final = guard ? await guard.recipients(room, { add, remove }) : [...new Set([...room.members, ...add])].filter((m) => !remove.includes(m));
    const rk = newRoomKey();
    const keys = [];
    for (const m of final) keys.push(await wrapRoomKey(await this.o.peers.pair(m, 'send'), roomId, rk.keyId, m, rk.key));
    const asked = ++this.tick;
    const updated = await this.o.api.changeMembers(roomId, { add, remove, keyId: rk.keyId, keys });
    this.keyring.add(roomId, rk.keyId, await importRoomKey(rk.key), { from: me.nick, publicKey: me.publicKey });
    rk.key.fill(0);
    // The new key is the newest before the guard queues the announcement: it must go under that
    // key, which the added members hold and the removed ones do not.
    await this.take(updated, asked);
    await guard?.changed(updated, { add, remove }, final);
    return updated;
  }

  async leave(roomId: string): Promise<void> {
    const room = this.cache.get(roomId);
    if (room) await this.guard?.leaving(room);
    await this.ended(room, () => this.o.api.leaveRoom(roomId));
    this.drop(roomId);
  }

  async delete(roomId: string): Promise<void> {
    const room = this.cache.get(roomId);
    if (room) await this.guard?.deleting(room);
    await this.ended(room, () => this.o.api.deleteRoom(roomId));
    this.drop(roomId);
  }

  /** The leave or deletion request; when it fails, the guard hears that the room stays. */
  private async ended(room: Room | undefined, request: () => Promise<void>): Promise<void> {
    try {
      await request();
    } catch (e) {
      if (room) this.guard?.stayed(room);
      throw e;
    }
  }
}
