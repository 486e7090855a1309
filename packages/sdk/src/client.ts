/**
 * Messenger: the account as the app sees it. It combines the API client, the crypto files and
 * the room-key bookkeeping: log in or register from a password, send and decrypt messages, make
 * and change rooms (a new room key on every membership change), and open the event stream.
 *
 * Peer public keys come from GET /api/users/{nick} and pass the app's `keyCheck` hook before
 * first use, so the app can pin them (trust on first use) and hold sending on a changed key.
 */
import { isNick, type EncryptedKey, type Envelope, type Kdf, type Room, type RoomKey } from '@svc/protocol';
import type { ApiClient } from './api.js';
import { b64, randomBytes } from './bytes.js';
import { deriveHistoryKey } from './crypto/atrest.js';
import { generateIdentity, identityMatches, openIdentity, openIdentityPkcs8, sealIdentity, type Identity } from './crypto/identity.js';
import { checkKdf, deriveMaster, newKdf, type Argon2Fn, type OnProgress } from './crypto/kdf.js';
import { deriveAccountKeys, type AccountKeys } from './crypto/keys.js';
import { decryptDm, decryptRoomMessage, encryptDm, encryptRoomMessage, type MessagePlain } from './crypto/message.js';
import { pairKey } from './crypto/pair.js';
import { importRoomKey, newRoomKey, unwrapRoomKey, wrapRoomKey } from './crypto/roomkey.js';
import { safetyNumber } from './crypto/safety.js';
import { SdkError } from './errors.js';
import { EventStream, type EventStreamOptions } from './events.js';
import { RoomKeyring } from './keyring.js';
import { checkSessionState, SESSION_STATE_VERSION, type SessionState } from './session.js';

/** Why a peer key is about to be used: the app may accept a changed key for reading but hold sending. */
export type KeyPurpose = 'send' | 'receive';

/**
 * Called before a peer's public key is first used in this session (per purpose). Return to accept;
 * throw (or return a promise that waits for the user's consent) to refuse or hold.
 */
export type KeyCheck = (nick: string, publicKey: string, purpose: KeyPurpose) => void | Promise<void>;

export interface MessengerOptions {
  api: ApiClient;
  keyCheck?: KeyCheck;
  /** Told about room keys that could not be unwrapped (a wrapper's key changed or is gone). */
  onKeyError?: (roomId: string, keyId: string, error: unknown) => void;
  /**
   * Where Argon2id runs (crypto/kdf.ts): the SDK's plain-JavaScript one on the calling thread by
   * default. A web app passes one that runs it in a Worker.
   */
  argon2?: Argon2Fn;
}

/** Chat id as the push payload and the app use it. */
export type ChatId = `dm:${string}` | `room:${string}`;

export type DecryptFailure =
  /** the tag did not verify: tampered, forged sender, or wrong key. */
  | 'decrypt_failed'
  /** no key with this keyId is held for the room. */
  | 'no_room_key'
  /** the sender's account no longer exists, so its public key is unknown. */
  | 'unknown_sender'
  /** the app's keyCheck refused the sender's key. */
  | 'untrusted_key'
  /** the envelope is not a form this client knows (bad target, addressed to someone else). */
  | 'malformed';

export type DecryptedMessage =
  | { ok: true; id: string; ts: number; from: string; chat: ChatId; body: string; sentAt: number }
  | { ok: false; id: string; ts: number; from: string; chat: ChatId; reason: DecryptFailure };

export interface SentMessage {
  id: string;
  /** Service acceptance time. */
  ts: number;
  chat: ChatId;
  from: string;
  body: string;
  sentAt: number;
}

export interface SendOptions {
  /** Reuse an id to retry a send whose answer was lost (the service answers the original {id, ts}). */
  id?: string;
  sentAt?: number;
}

interface Me {
  nick: string;
  identity: Identity;
  kdf: Kdf;
  historyKey: CryptoKey;
}

export class Messenger {
  readonly api: ApiClient;
  private readonly keyCheck: KeyCheck | undefined;
  private readonly onKeyError: MessengerOptions['onKeyError'];
  private readonly argon2: Argon2Fn | undefined;
  private me: Me | null = null;
  private peers = new Map<string, Promise<string>>();
  private checked = new Map<string, string>();
  private pairs = new Map<string, Promise<CryptoKey>>();
  private roomCache = new Map<string, Room>();
  /** Per room: the newest keyId as the service lists it, and the tick when that was learnt (noteNewest). */
  private newestKeys = new Map<string, { keyId: string; at: number }>();
  /** Per room: every keyId the service has listed to this client, to tell a stale listing. */
  private listedKeys = new Map<string, Set<string>>();
  /** Counts room requests and events, to tell which of two answers was asked for later. */
  private roomTick = 0;
  readonly keyring = new RoomKeyring();

  constructor(opts: MessengerOptions) {
    this.api = opts.api;
    this.keyCheck = opts.keyCheck;
    this.onKeyError = opts.onKeyError;
    this.argon2 = opts.argon2;
  }

  // ---- account ----

  get loggedIn(): boolean {
    return this.me !== null;
  }

  get nick(): string {
    return this.need().nick;
  }

  get publicKey(): string {
    return this.need().identity.publicKey;
  }

  /** Key for history at rest (sealAtRest/openAtRest); the same on all devices and across password changes. */
  get historyKey(): CryptoKey {
    return this.need().historyKey;
  }

  get kdf(): Kdf {
    return this.need().kdf;
  }

  private need(): Me {
    if (!this.me) throw new SdkError('not_ready');
    return this.me;
  }

  /**
   * Creates the account (and its session): a new identity key pair sealed under the password.
   * `kdf` overrides the default parameters (tests use the minimum); it must lie within the bounds.
   */
  async register(o: { nick: string; password: string; invite?: string; kdf?: Partial<Pick<Kdf, 'm' | 't' | 'p'>> }, onProgress?: OnProgress): Promise<void> {
    const kdf = newKdf(o.kdf);
    const keys = await this.keysFor(o.password, kdf, onProgress);
    const identity = await generateIdentity();
    const encryptedKey = await sealIdentity(keys.encKey, identity, o.nick);
    identity.pkcs8.fill(0);
    onProgress?.('contacting_service');
    await this.api.register({
      nick: o.nick,
      authKey: keys.authKey,
      kdf,
      publicKey: identity.publicKey,
      encryptedKey,
      ...(o.invite !== undefined ? { invite: o.invite } : {}),
    });
    await this.start(o.nick, { publicKey: identity.publicKey, privateKey: identity.privateKey }, kdf, onProgress);
  }

  /** Logs in: fetches and checks the KDF parameters, derives the keys, opens the identity. */
  async login(o: { nick: string; password: string }, onProgress?: OnProgress): Promise<void> {
    onProgress?.('fetching_params');
    const kdf = checkKdf(await this.api.kdf(o.nick));
    const keys = await this.keysFor(o.password, kdf, onProgress);
    onProgress?.('contacting_service');
    // A login overwrites the cookie without ending the old session; end it first (401 = none).
    await this.api.logout();
    const res = await this.api.login({ nick: o.nick, authKey: keys.authKey });
    onProgress?.('opening_identity');
    const identity = await openIdentity(keys.encKey, res.encryptedKey, res.nick, res.publicKey);
    identity.pkcs8.fill(0);
    await this.start(res.nick, { publicKey: identity.publicKey, privateKey: identity.privateKey }, checkKdf(res.kdf), onProgress);
  }

  /**
   * What the app stores to resume this Messenger after a restart without the password (see
   * session.ts): the identity key pair (the private key as a non-extractable CryptoKey, which
   * IndexedDB keeps by structured clone), nick, KDF parameters and device id. Store it again after
   * changePassword (the KDF parameters change) and delete it at sign-out.
   */
  exportSession(): SessionState {
    const me = this.need();
    return {
      v: SESSION_STATE_VERSION,
      nick: me.nick,
      publicKey: me.identity.publicKey,
      privateKey: me.identity.privateKey,
      kdf: { ...me.kdf },
      deviceId: this.api.device ?? null,
    };
  }

  /**
   * A Messenger signed in from a saved state, with no password and no request: the service
   * session is the cookie the client (browser) still holds. SdkError `bad_session` when the state
   * is malformed or its private key does not belong to its public key. The first request tells
   * whether the service session still lives (401 `unauthenticated` if not: log in again).
   */
  static async resume(opts: MessengerOptions, state: unknown): Promise<Messenger> {
    const s = checkSessionState(state);
    if (!(await identityMatches(s.privateKey, s.publicKey))) throw new SdkError('bad_session', { message: 'The saved identity key does not match its public key; log in again.' });
    const m = new Messenger(opts);
    if (s.deviceId !== null) m.api.setDevice(s.deviceId);
    await m.start(s.nick, { publicKey: s.publicKey, privateKey: s.privateKey }, s.kdf);
    return m;
  }

  private async keysFor(password: string, kdf: Kdf, onProgress?: OnProgress): Promise<AccountKeys> {
    const master = await deriveMaster(password, kdf, { argon2: this.argon2, onProgress });
    try {
      return await deriveAccountKeys(master);
    } finally {
      master.fill(0);
    }
  }

  private async start(nick: string, identity: Identity, kdf: Kdf, onProgress?: OnProgress): Promise<void> {
    this.reset();
    this.me = { nick, identity, kdf, historyKey: await deriveHistoryKey(identity) };
    // One's own key needs no check: it comes from the sealed blob this password opened.
    this.peers.set(nick, Promise.resolve(identity.publicKey));
    this.checked.set(`${nick}|send`, identity.publicKey);
    this.checked.set(`${nick}|receive`, identity.publicKey);
    onProgress?.('done');
  }

  private reset(): void {
    this.me = null;
    this.peers.clear();
    this.checked.clear();
    this.pairs.clear();
    this.roomCache.clear();
    this.newestKeys.clear();
    this.listedKeys.clear();
    this.keyring.clear();
  }

  /** Ends the session and forgets every key in memory. */
  async logout(): Promise<void> {
    try {
      await this.api.logout();
    } finally {
      this.reset();
    }
  }

  /**
   * New password: new salt, the same identity re-sealed under the new encryption key. Other
   * sessions of the account end (the service revokes them); this one stays.
   */
  async changePassword(oldPassword: string, newPassword: string, o: { kdf?: Partial<Pick<Kdf, 'm' | 't' | 'p'>> } = {}, onProgress?: OnProgress): Promise<void> {
    const me = this.need();
    const current = await this.api.me();
    const oldKeys = await this.keysFor(oldPassword, checkKdf(current.kdf), onProgress);
    const pkcs8 = await openIdentityPkcs8(oldKeys.encKey, current.encryptedKey, me.nick);
    const kdf = newKdf(o.kdf);
    const newKeys = await this.keysFor(newPassword, kdf, onProgress);
    let encryptedKey: EncryptedKey;
    try {
      encryptedKey = await sealIdentity(newKeys.encKey, { pkcs8 }, me.nick);
    } finally {
      pkcs8.fill(0);
    }
    onProgress?.('contacting_service');
    await this.api.changePassword({ authKey: oldKeys.authKey, newAuthKey: newKeys.authKey, kdf, encryptedKey });
    me.kdf = kdf;
    onProgress?.('done');
  }

  /** Deletes the account for good (the nick is retired) after re-deriving the auth key from the password. */
  async deleteAccount(password: string, onProgress?: OnProgress): Promise<void> {
    const me = this.need();
    const keys = await this.keysFor(password, me.kdf, onProgress);
    onProgress?.('contacting_service');
    await this.api.deleteMe(keys.authKey);
    this.reset();
  }

  /** Registers this device id (idempotent) and makes it the client's X-Device. */
  async ensureDevice(deviceId: string): Promise<{ created: boolean }> {
    const r = await this.api.addDevice(deviceId);
    this.api.setDevice(deviceId);
    return { created: r.created };
  }

  // ---- peers ----

  /** A peer's public key, fetched once per session and passed through keyCheck for `purpose`. */
  async peerKey(nick: string, purpose: KeyPurpose = 'send'): Promise<string> {
    let p = this.peers.get(nick);
    if (!p) {
      p = this.api.user(nick).then((u) => u.publicKey);
      this.peers.set(nick, p);
      p.catch(() => this.peers.delete(nick));
    }
    const publicKey = await p;
    await this.checkKey(nick, publicKey, purpose);
    return publicKey;
  }

  /**
   * Passes `publicKey` of `nick` through keyCheck for `purpose` (once per session while accepted).
   * Not necessarily the key the service shows now: a room key is checked against the key it was
   * unwrapped with.
   */
  private async checkKey(nick: string, publicKey: string, purpose: KeyPurpose): Promise<void> {
    const tag = `${nick}|${purpose}`;
    if (this.checked.get(tag) === publicKey) return;
    if (this.keyCheck) {
      try {
        await this.keyCheck(nick, publicKey, purpose);
      } catch (cause) {
        throw cause instanceof SdkError ? cause : new SdkError('untrusted_key', { cause });
      }
    }
    this.checked.set(tag, publicKey);
  }

  /** Forgets what is cached about a peer (after the user accepted a changed key, or to re-check it). */
  forgetPeer(nick: string): void {
    if (nick === this.me?.nick) return;
    this.peers.delete(nick);
    this.checked.delete(`${nick}|send`);
    this.checked.delete(`${nick}|receive`);
    for (const k of [...this.pairs.keys()]) if (k.startsWith(`${nick}|`)) this.pairs.delete(k);
  }

  private async pairWith(peer: string, purpose: KeyPurpose): Promise<CryptoKey> {
    return (await this.pairAndKey(peer, purpose)).pair;
  }

  /** The pair key with a peer and the peer public key it was made with. */
  private async pairAndKey(peer: string, purpose: KeyPurpose): Promise<{ pair: CryptoKey; publicKey: string }> {
    const me = this.need();
    const publicKey = await this.peerKey(peer, purpose);
    const tag = `${peer}|${publicKey}`;
    let k = this.pairs.get(tag);
    if (!k) {
      k = pairKey(me.identity.privateKey, me.nick, peer, publicKey);
      this.pairs.set(tag, k);
      k.catch(() => this.pairs.delete(tag));
    }
    return { pair: await k, publicKey };
  }

  /** The safety number with a peer, to compare out of band. */
  async safetyNumber(peer: string): Promise<string> {
    const me = this.need();
    return safetyNumber(me.nick, me.identity.publicKey, peer, await this.peerKey(peer, 'receive'));
  }

  // ---- messages ----

  async sendDm(peer: string, text: string, o: SendOptions = {}): Promise<SentMessage> {
    const me = this.need();
    const id = o.id ?? this.api.newId();
    const sentAt = o.sentAt ?? this.api.now();
    const key = await this.pairWith(peer, 'send');
    const s = await encryptDm(key, { id, from: me.nick, to: peer }, { body: text, sentAt });
    const r = await this.api.sendMessage({ id, to: { dm: peer }, keyId: 'dm', iv: s.iv, ct: s.ct });
    return { id: r.id, ts: r.ts, chat: `dm:${peer}`, from: me.nick, body: text, sentAt };
  }

  /**
   * Sends under the room's newest key as the service lists it, never under an older one: when
   * that key is not held (its unwrap failed, or the room is not known yet) the rooms are read
   * again once, and if it is still not held, SdkError `no_room_key` (`not_member` when the room
   * is not listed at all). The key must also come from a trusted wrapper: its wrapper's public
   * key, the one it was unwrapped with, passes keyCheck for `send` (one's own keys always do).
   * A key wrapped under a changed, not yet accepted key thus holds sending like a DM to that peer
   * (SdkError `untrusted_key`, or whatever the hook does) until the user accepts the change.
   */
  async sendRoom(roomId: string, text: string, o: SendOptions = {}): Promise<SentMessage> {
    const me = this.need();
    let k = this.sendKey(roomId);
    if (!k) {
      await this.syncRooms();
      k = this.sendKey(roomId);
    }
    // keyCheck may wait for the user's consent; if a newer key came meanwhile, check that one.
    for (let tries = 0; k; tries++) {
      await this.checkKey(k.from, k.publicKey, 'send');
      if (this.roomKeyId(roomId) === k.keyId) break;
      k = tries < 3 ? this.sendKey(roomId) : undefined;
    }
    if (!k) {
      if (!this.roomCache.has(roomId)) throw new SdkError('not_member');
      throw new SdkError('no_room_key', {
        message: 'The room’s newest key could not be unwrapped on this device, and an older key is never used for sending. Retry later, or ask the owner to rotate the key.',
      });
    }
    const id = o.id ?? this.api.newId();
    const sentAt = o.sentAt ?? this.api.now();
    const s = await encryptRoomMessage(k.key, { id, from: me.nick, roomId, keyId: k.keyId }, { body: text, sentAt });
    const r = await this.api.sendMessage({ id, to: { room: roomId }, keyId: k.keyId, iv: s.iv, ct: s.ct });
    return { id: r.id, ts: r.ts, chat: `room:${roomId}`, from: me.nick, body: text, sentAt };
  }

  /**
   * The keyId sendRoom uses: the room's newest key as the service lists it (GET /api/rooms,
   * `room` events and room responses list keys oldest first). Undefined while no key is listed.
   */
  roomKeyId(roomId: string): string | undefined {
    return this.newestKeys.get(roomId)?.keyId;
  }

  /** The room's newest key with its origin, if this client holds it. */
  private sendKey(roomId: string): { keyId: string; key: CryptoKey; from: string; publicKey: string } | undefined {
    const keyId = this.roomKeyId(roomId);
    const held = keyId === undefined ? undefined : this.keyring.entry(roomId, keyId);
    return keyId !== undefined && held ? { keyId, ...held } : undefined;
  }

  /**
   * Decrypts one envelope. Never throws for a bad envelope: a failure is a result with a reason,
   * to show as an error. It throws only for passing trouble fetching the sender's key (network,
   * rate limit, session ended), so that the envelope is not acknowledged and comes again.
   */
  async decryptEnvelope(env: Envelope): Promise<DecryptedMessage> {
    const me = this.need();
    const to = env?.to as { dm?: unknown; room?: unknown } | undefined;
    const base = { id: String(env?.id), ts: Number(env?.ts), from: String(env?.from) };
    if (typeof to?.dm === 'string') {
      // An incoming DM is addressed to me; my own DM (sent from another device) is addressed to the peer.
      const peer = env.from === me.nick ? to.dm : env.from;
      const chat: ChatId = `dm:${peer}`;
      if (env.from !== me.nick && to.dm !== me.nick) return { ...base, chat, ok: false, reason: 'malformed' };
      if (!isNick(peer)) return { ...base, chat, ok: false, reason: 'malformed' };
      let key: CryptoKey;
      try {
        key = await this.pairWith(peer, 'receive');
      } catch (e) {
        return { ...base, chat, ok: false, reason: failureOf(e) };
      }
      return this.open(base, chat, () => decryptDm(key, env));
    }
    if (typeof to?.room === 'string') {
      const roomId = to.room;
      const chat: ChatId = `room:${roomId}`;
      let key = this.keyring.get(roomId, env.keyId);
      if (!key) {
        // The key may have come while the stream was down (room events are not queued).
        await this.syncRooms().catch(() => undefined);
        key = this.keyring.get(roomId, env.keyId);
      }
      if (!key) return { ...base, chat, ok: false, reason: 'no_room_key' };
      const k = key;
      return this.open(base, chat, () => decryptRoomMessage(k, env));
    }
    return { ...base, chat: `dm:${base.from}`, ok: false, reason: 'malformed' };
  }

  private async open(base: { id: string; ts: number; from: string }, chat: ChatId, f: () => Promise<MessagePlain>): Promise<DecryptedMessage> {
    try {
      const m = await f();
      return { ...base, chat, ok: true, body: m.body, sentAt: m.sentAt };
    } catch {
      return { ...base, chat, ok: false, reason: 'decrypt_failed' };
    }
  }

  // ---- rooms ----

  /** The rooms as last seen (after syncRooms, a room event or a room call). */
  get rooms(): Room[] {
    return [...this.roomCache.values()];
  }

  room(roomId: string): Room | undefined {
    return this.roomCache.get(roomId);
  }

  /** Re-reads GET /api/rooms and unwraps every key not held yet. Call after each `ready`. */
  async syncRooms(): Promise<Room[]> {
    const asked = ++this.roomTick;
    const rooms = await this.api.rooms();
    const seen = new Set<string>();
    for (const r of rooms) {
      seen.add(r.id);
      await this.takeRoom(r, asked);
    }
    for (const id of [...this.roomCache.keys()]) {
      // A room whose event came after this request was sent is newer than this answer.
      if (!seen.has(id) && !((this.newestKeys.get(id)?.at ?? 0) > asked)) this.dropRoom(id);
    }
    return rooms;
  }

  /** Takes in a Room (from a `room` event or a response): keeps it and unwraps its keys. */
  applyRoom(room: Room): Promise<void> {
    return this.takeRoom(room, ++this.roomTick);
  }

  /** `asked`: the tick when the request that answered `room` was sent (or the event came). */
  private async takeRoom(room: Room, asked: number): Promise<void> {
    const me = this.need();
    this.roomCache.set(room.id, room);
    this.noteNewest(room, asked);
    for (const k of room.keys) {
      if (this.keyring.has(room.id, k.keyId)) continue;
      try {
        const u = await this.unwrap(me, room.id, k);
        this.keyring.add(room.id, k.keyId, u.key, { from: k.from, publicKey: u.publicKey });
      } catch (e) {
        this.onKeyError?.(room.id, k.keyId, e);
      }
    }
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
  private async unwrap(me: Me, roomId: string, k: RoomKey): Promise<{ key: CryptoKey; publicKey: string }> {
    const { pair, publicKey } = await this.pairAndKey(k.from, 'receive');
    return { key: await unwrapRoomKey(pair, roomId, k.keyId, me.nick, k), publicKey };
  }

  /** Forgets a room (not its keys, so that stored envelopes still open). */
  private dropRoom(roomId: string): void {
    this.roomCache.delete(roomId);
    this.newestKeys.delete(roomId);
    this.listedKeys.delete(roomId);
  }

  /** After `room_left`: the room is gone from the list. Its keys are kept so stored envelopes still open. */
  roomLeft(roomId: string): void {
    this.dropRoom(roomId);
  }

  /** Creates a room owned by this account, then adds `members` (with a fresh key for all) when given. */
  async createRoom(name: string, members: string[] = []): Promise<Room> {
    const me = this.need();
    const id = b64(randomBytes(16));
    const rk = newRoomKey();
    const own = await wrapRoomKey(await this.pairWith(me.nick, 'send'), id, rk.keyId, me.nick, rk.key);
    const asked = ++this.roomTick;
    const room = await this.api.createRoom({ id, name, keyId: rk.keyId, keys: [own] });
    this.keyring.add(id, rk.keyId, await importRoomKey(rk.key), { from: me.nick, publicKey: me.identity.publicKey });
    rk.key.fill(0);
    await this.takeRoom(room, asked);
    const others = members.filter((m) => m !== me.nick);
    return others.length > 0 ? this.changeMembers(id, { add: others }) : room;
  }

  /**
   * Adds and removes members (owner only), always with a new room key wrapped for the final
   * membership, so removed members cannot read what follows and added ones cannot read what came before.
   */
  async changeMembers(roomId: string, change: { add?: string[]; remove?: string[] }): Promise<Room> {
    const me = this.need();
    const add = [...new Set(change.add ?? [])];
    const remove = [...new Set(change.remove ?? [])];
    let room = this.roomCache.get(roomId);
    if (!room) {
      await this.syncRooms();
      room = this.roomCache.get(roomId);
      if (!room) throw new SdkError('not_member');
    }
    const final = [...new Set([...room.members, ...add])].filter((m) => !remove.includes(m));
    const rk = newRoomKey();
    const keys = [];
    for (const m of final) keys.push(await wrapRoomKey(await this.pairWith(m, 'send'), roomId, rk.keyId, m, rk.key));
    const asked = ++this.roomTick;
    const updated = await this.api.changeMembers(roomId, { add, remove, keyId: rk.keyId, keys });
    this.keyring.add(roomId, rk.keyId, await importRoomKey(rk.key), { from: me.nick, publicKey: me.identity.publicKey });
    rk.key.fill(0);
    await this.takeRoom(updated, asked);
    return updated;
  }

  /** A new key for the same members (owner only); due when a room shows needsRekey. */
  rotateRoomKey(roomId: string): Promise<Room> {
    return this.changeMembers(roomId, {});
  }

  async leaveRoom(roomId: string): Promise<void> {
    await this.api.leaveRoom(roomId);
    this.dropRoom(roomId);
  }

  async deleteRoom(roomId: string): Promise<void> {
    await this.api.deleteRoom(roomId);
    this.dropRoom(roomId);
  }

  // ---- events ----

  /**
   * Opens this device's event stream with room bookkeeping wired in: `room` events update the
   * rooms and keys before the app's onRoom, `room_left` drops the room, and every `ready`
   * re-reads the rooms (room events are not queued). Call start() on the result.
   */
  events(o: EventStreamOptions): EventStream {
    return new EventStream(this.api, {
      ...o,
      onRoom: async (room) => {
        await this.applyRoom(room);
        await o.onRoom?.(room);
      },
      onRoomLeft: async (ev) => {
        this.roomLeft(ev.id);
        await o.onRoomLeft?.(ev);
      },
      onReady: async () => {
        await this.syncRooms().catch((e: unknown) => o.onError?.(e));
        await o.onReady?.();
      },
    });
  }
}

/**
 * A permanent failure becomes a reason; a passing one (network, rate limit, session ended) is
 * rethrown so the envelope is not acknowledged and comes again.
 */
function failureOf(e: unknown): DecryptFailure {
  if (e instanceof SdkError) {
    if (e.code === 'unknown_user') return 'unknown_sender';
    if (e.code === 'untrusted_key') return 'untrusted_key';
    if (e.code === 'invalid') return 'malformed';
  }
  throw e;
}
