/**
 * Messenger: the account as the app sees it. It combines the API client, the crypto files and
 * the room-key bookkeeping: log in or register from a password, send and decrypt messages, make
 * and change rooms (a new room key on every membership change), and open the event stream.
 * The account's steps with the service (account.ts), peers (peers.ts), rooms (rooms.ts) and
 * message crypto (envelopes.ts) live in their own files; this one holds the signed-in state and the
 * calls an app makes.
 *
 * Peer public keys come from GET /api/users/{nick} and pass the app's `keyCheck` hook before
 * first use, so the app can pin them (trust on first use) and hold sending on a changed key.
 */
import type { Envelope, Kdf, Room } from '@svc/protocol';
import type { ApiClient } from './api.js';
import type { PlainInput } from './wire/plaintext.js';
import { identityMatches, type Identity } from './crypto/identity.js';
import { KDF_DEFAULTS, type Argon2Fn, type OnProgress } from './crypto/kdf.js';
import type { KdfChoice } from './credentials.js';
import * as account from './account.js';
import { SdkError } from './errors.js';
import { EventStream, type EventStreamOptions } from './events.js';
import type { RoomKeyring } from './keyring.js';
import {
  decryptEnvelope,
  sendPlain,
  type ChatId,
  type DecryptedMessage,
  type MessageContext,
  type SendOptions,
  type SentMessage,
} from './envelopes.js';
import { Peers, type KeyCheck, type KeyPurpose } from './peers.js';
import { RoomBook, type RoomGuard } from './rooms.js';
import { checkSessionState, SESSION_STATE_VERSION, type SessionState } from './session.js';

export type { KeyCheck, KeyPurpose } from './peers.js';
export type { ChatId, DecryptFailure, DecryptedMessage, SendOptions, SentMessage } from './envelopes.js';

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
  /**
   * The weakest KDF work (m, t) a sign-in accepts without the person's consent: the parameters
   * this device saw for the account before, else the defaults of new accounts (KDF_DEFAULTS).
   * Below it, login() refuses with `kdf_weak` before deriving or sending anything, unless called
   * with `acceptWeakKdf` after the person was warned. A hostile service cannot make authKey
   * cheaper to attack offline by serving the floor values.
   */
  kdfFloor?: Pick<Kdf, 'm' | 't'>;
}

interface Me extends account.AccountKeys {
  nick: string;
  identity: Identity;
  kdf: Kdf;
}

export class Messenger {
  readonly api: ApiClient;
  private readonly keyCheck: KeyCheck | undefined;
  private readonly onKeyError: MessengerOptions['onKeyError'];
  private readonly argon2: Argon2Fn | undefined;
  private readonly kdfFloor: Pick<Kdf, 'm' | 't'>;
  private me: Me | null = null;
  private signedIn: { peers: Peers; rooms: RoomBook; ctx: MessageContext } | null = null;
  private guard: RoomGuard | null = null;

  constructor(opts: MessengerOptions) {
    this.api = opts.api;
    this.keyCheck = opts.keyCheck;
    this.onKeyError = opts.onKeyError;
    this.argon2 = opts.argon2;
    this.kdfFloor = opts.kdfFloor ?? KDF_DEFAULTS;
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

  /** HMAC key for the tags that find records at rest without naming them (atRestTag); derived from the history key. */
  get indexKey(): CryptoKey {
    return this.need().indexKey;
  }

  /** Key that seals history moved between the account's own devices (conversation/transfer.ts). */
  get transferKey(): CryptoKey {
    return this.need().transferKey;
  }

  /** Key of the sealed history file (conversation/export.ts): the password alone opens it again. */
  get exportKey(): CryptoKey {
    return this.need().exportKey;
  }

  /** The KDF parameters this device derived the password with (sign-up, sign-in, or the last new password). */
  get kdf(): Kdf {
    return this.need().kdf;
  }

  private need(): Me {
    if (!this.me) throw new SdkError('not_ready');
    return this.me;
  }

  private parts(): { peers: Peers; rooms: RoomBook; ctx: MessageContext } {
    if (!this.signedIn) throw new SdkError('not_ready');
    return this.signedIn;
  }

  /**
   * Creates the account (and its session): a new identity key pair sealed under the password.
   * `kdf` overrides the default parameters (tests use the minimum); it must lie within the bounds.
   */
  async register(o: { nick: string; password: string; invite?: string; kdf?: KdfChoice }, onProgress?: OnProgress): Promise<void> {
    const a = await account.signUp(this.api, this.argon2, o, onProgress);
    await this.start(a.nick, a.identity, a.kdf, onProgress);
  }

  /** Logs in: fetches and checks the KDF parameters, derives the keys, opens the identity. */
  async login(o: { nick: string; password: string; acceptWeakKdf?: boolean }, onProgress?: OnProgress): Promise<void> {
    const a = await account.signIn(this.api, this.argon2, this.kdfFloor, o, onProgress);
    await this.start(a.nick, a.identity, a.kdf, onProgress);
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
    if (!(await identityMatches(s.privateKey, s.publicKey)))
      throw new SdkError('bad_session', { message: 'The saved identity key does not match its public key; log in again.' });
    const m = new Messenger(opts);
    if (s.deviceId !== null) m.api.setDevice(s.deviceId);
    await m.start(s.nick, { publicKey: s.publicKey, privateKey: s.privateKey }, s.kdf);
    return m;
  }

  /**
   * Opens a Messenger again from a saved state without its private key (an app's lock drops the
   * key from memory and storage, and keeps the service session): the password, derived with the
   * saved KDF parameters as a sign-in does, opens the identity the service keeps for the session
   * (GET /api/me, the session cookie: no new login, nothing sent but that request). SdkError
   * `bad_identity` for a wrong password, `unauthenticated` when the service session ended,
   * `bad_response` when the service answers with another account or key.
   */
  static async unlock(
    opts: MessengerOptions,
    state: Omit<SessionState, 'privateKey'>,
    password: string,
    onProgress?: OnProgress,
  ): Promise<Messenger> {
    const m = new Messenger(opts);
    if (state.deviceId !== null) m.api.setDevice(state.deviceId);
    const a = await account.unlockAccount(m.api, m.argon2, state, password, onProgress);
    await m.start(a.nick, a.identity, a.kdf, onProgress);
    return m;
  }

  private async start(nick: string, identity: Identity, kdf: Kdf, onProgress?: OnProgress): Promise<void> {
    this.reset();
    const me: Me = { nick, identity, kdf, ...(await account.deriveAccountKeys(identity)) };
    const peers = new Peers(this.api, this.keyCheck, me);
    const rooms = new RoomBook({
      api: this.api,
      peers,
      me: { nick, publicKey: identity.publicKey },
      onKeyError: this.onKeyError,
      guard: () => this.guard,
    });
    this.me = me;
    this.signedIn = { peers, rooms, ctx: { api: this.api, peers, rooms, nick } };
    onProgress?.('done');
  }

  private reset(): void {
    this.signedIn?.rooms.keyring.clear();
    this.me = null;
    this.signedIn = null;
    this.guard = null;
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
  async changePassword(oldPassword: string, newPassword: string, o: { kdf?: KdfChoice } = {}, onProgress?: OnProgress): Promise<void> {
    const me = this.need();
    me.kdf = await account.newPassword(
      this.api,
      this.argon2,
      me.nick,
      me.kdf,
      { oldPassword, newPassword, ...(o.kdf ? { kdf: o.kdf } : {}) },
      onProgress,
    );
    onProgress?.('done');
  }

  /** Deletes the account for good (the nick is retired) after re-deriving the auth key from the password. */
  async deleteAccount(password: string, onProgress?: OnProgress): Promise<void> {
    const me = this.need();
    await account.deleteAccount(this.api, this.argon2, me.kdf, password, onProgress);
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
  peerKey(nick: string, purpose: KeyPurpose = 'send'): Promise<string> {
    return this.parts().peers.key(nick, purpose);
  }

  /** Forgets what is cached about a peer (after the user accepted a changed key, or to re-check it). */
  forgetPeer(nick: string): void {
    this.signedIn?.peers.forget(nick);
  }

  /** The safety number with a peer, to compare out of band. */
  safetyNumber(peer: string): Promise<string> {
    return this.parts().peers.safetyNumber(peer);
  }

  // ---- messages ----

  /** Sends any plaintext type (wire/plaintext.ts) to `dm:<nick>` or `room:<id>`. */
  send(chat: ChatId, plain: PlainInput, o: SendOptions = {}): Promise<SentMessage> {
    return sendPlain(this.parts().ctx, chat, plain, o);
  }

  sendDm(peer: string, text: string, o: SendOptions = {}): Promise<SentMessage> {
    return this.send(`dm:${peer}`, { type: 'text', body: text, sentAt: 0 }, o);
  }

  /** Sends under the room's newest key as the service lists it, never under an older one (envelopes.ts). */
  sendRoom(roomId: string, text: string, o: SendOptions = {}): Promise<SentMessage> {
    return this.send(`room:${roomId}`, { type: 'text', body: text, sentAt: 0 }, o);
  }

  /**
   * Decrypts one envelope. Never throws for a bad envelope: a failure is a result with a reason,
   * to show as an error. It throws only for passing trouble fetching the sender's key (network,
   * rate limit, session ended), so that the envelope is not acknowledged and comes again.
   */
  decryptEnvelope(env: Envelope): Promise<DecryptedMessage> {
    return decryptEnvelope(this.parts().ctx, env);
  }

  // ---- rooms ----

  /**
   * Who decides whom new room keys are wrapped for: the conversation layer's membership record
   * (Conversations sets it). Without a guard the service's list of members decides.
   */
  setRoomGuard(guard: RoomGuard | null): void {
    this.guard = guard;
  }

  get keyring(): RoomKeyring {
    return this.parts().rooms.keyring;
  }

  /** The rooms as last seen (after syncRooms, a room event or a room call). */
  get rooms(): Room[] {
    return this.signedIn?.rooms.list ?? [];
  }

  room(roomId: string): Room | undefined {
    return this.signedIn?.rooms.get(roomId);
  }

  /** The keyId sendRoom uses: the room's newest key as the service lists it. */
  roomKeyId(roomId: string): string | undefined {
    return this.signedIn?.rooms.newestKeyId(roomId);
  }

  /** Re-reads GET /api/rooms and unwraps every key not held yet. Call after each `ready`. */
  syncRooms(): Promise<Room[]> {
    return this.parts().rooms.sync();
  }

  /** Takes in a Room (from a `room` event or a response): keeps it and unwraps its keys. */
  applyRoom(room: Room): Promise<void> {
    return this.parts().rooms.apply(room);
  }

  /** After `room_left`: the room is gone from the list. Its keys are kept so stored envelopes still open. */
  roomLeft(roomId: string): void {
    this.signedIn?.rooms.drop(roomId);
  }

  /** Creates a room owned by this account, then adds `members` (with a fresh key for all) when given. */
  createRoom(name: string, members: string[] = []): Promise<Room> {
    return this.parts().rooms.create(name, members);
  }

  /**
   * Adds and removes members (owner only), always with a new room key wrapped for the final
   * membership, so removed members cannot read what follows and added ones cannot read what came before.
   * With a room guard set, the final membership is the recorded one: SdkError `unannounced_member`
   * while the service lists someone nobody added (name them in `add` or `remove` to decide).
   */
  changeMembers(roomId: string, change: { add?: string[]; remove?: string[] }): Promise<Room> {
    return this.parts().rooms.changeMembers(roomId, change);
  }

  /** A new key for the same members (owner only); due when a room shows needsRekey. */
  rotateRoomKey(roomId: string): Promise<Room> {
    return this.changeMembers(roomId, {});
  }

  leaveRoom(roomId: string): Promise<void> {
    return this.parts().rooms.leave(roomId);
  }

  deleteRoom(roomId: string): Promise<void> {
    return this.parts().rooms.delete(roomId);
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
