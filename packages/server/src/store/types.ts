/**
 * The storage interface: one method per domain action, each one transaction. The SQLite and
 * PostgreSQL stores implement it, checked by one test suite. Methods are async so that a networked
 * database fits; no SQL leaves the store.
 *
 * Refusals that depend on stored state come back as `{ error: code }` results rather than
 * exceptions, in the order docs/API.md lists them, so the domain layer decides how to answer.
 */
import type { Envelope, EnvelopeJson, Kdf, EncryptedKey, Room, Target, WrappedKey, Contact, ErrorCode } from '@svc/protocol';

export type Refusal<C extends ErrorCode = ErrorCode> = { error: C; field?: string };

export interface AccountRecord {
  nick: string;
  authKeyHash: Uint8Array;
  kdf: Kdf;
  publicKey: string;
  encryptedKey: EncryptedKey;
  createdAt: number;
}

export interface SessionRecord {
  id: string; // hex SHA-256 of the token: the only form the store keeps
  nick: string;
  createdAt: number;
  lastUsedAt: number;
}

export interface DeviceRecord {
  id: string;
  nick: string;
  createdAt: number;
  lastSeenAt: number | null;
  push: boolean;
}

export interface PushTarget {
  deviceId: string;
  endpoint: string;
  p256dh: string;
  auth: string;
}

export interface NewAccount {
  nick: string;
  authKeyHash: Uint8Array;
  kdf: Kdf;
  publicKey: string;
  encryptedKey: EncryptedKey;
  invite: string | null;
  requireInvite: boolean;
  sessionId: string;
  now: number;
}

/** Who must hear about a room change: per nick, the devices to tell and the payload key. */
export interface RoomFanout {
  room: Room; // the room as stored after the change, `keys` empty
  /** Members of the final membership, each with their own new key (or none). */
  members: { nick: string; devices: string[]; key: Room['keys'][number] | null }[];
  /** Accounts that lost the room, with their devices. */
  removed: { nick: string; devices: string[] }[];
}

export interface LeaveResult {
  roomId: string;
  /** false when the caller was not a member or the room does not exist. */
  left: boolean;
  deleted: boolean;
  callerDevices: string[];
  /** Remaining members and their devices (when the room still exists), and the room after. */
  fanout: RoomFanout | null;
}

export interface SendInput {
  id: string;
  from: string;
  to: Target;
  keyId: string;
  iv: string;
  ct: string;
  senderDevice: string;
  now: number;
  /**
   * The session the caller presented, when its check is left to the send itself (a session this
   * instance remembers, docs/DESIGN.md): the store reads it and the
   * owner of `senderDevice` with the send's facts, and passes both to the caller's checks. Only
   * for a store whose `confirmsCallerInSend` is true.
   */
  session?: string;
}

/** The caller's session and X-Device as the send's own reads found them (SendInput.session). */
export interface CallerFacts {
  /** The nick of the session, null when there is no such session. */
  sessionNick: string | null;
  /** The owner of the send's device, null when no device has that id. */
  deviceOwner: string | null;
}

/** What a store knows about a send's target: the facts its rights depend on. */
export type TargetFacts =
  /** A room that does not exist has no members. */
  | { room: true; senderIsMember: boolean; keyIsKnown: boolean }
  /** A deleted account is not live. */
  | { room: false; recipientIsLive: boolean };

/**
 * The caller's checks before a send is stored (Store.sendMessage): throws to refuse it. `caller`
 * is given when the send carried its session (SendInput.session).
 */
export type Admit = (facts: TargetFacts, caller?: CallerFacts) => Promise<void>;

export interface SendTarget {
  deviceId: string;
  nick: string;
  /**
   * A push candidate (docs/API.md): has a push subscription and no push pending, as the send
   * saw it. Only such targets can be claimed for a push, so only for them is presence worth
   * asking (a Redis round trip).
   */
  pushable: boolean;
}

/** A send stored and queued: what the domain needs to deliver it and to push it, as the send's transaction saw it. */
export interface SendQueued {
  status: 'queued';
  envelope: Envelope;
  /** The envelope as stored: the data of its `msg` event for every target. */
  json: EnvelopeJson;
  /** The devices it was queued for. */
  targets: SendTarget[];
  /** The room's name, for the push notification's title (docs/API.md); null for a DM. */
  roomName: string | null;
}

export type SendResult =
  SendQueued | { status: 'retry'; id: string; ts: number } | Refusal<'id_conflict' | 'not_member' | 'unknown_key' | 'unknown_user' | 'self'>;

export interface QueuedEntry {
  /** The entry's place in its device's queue (the replay's cursor): a number only its store reads. */
  seq: number;
  id: string;
  /** The bytes the send stored, as its live `msg` events carried them. */
  json: EnvelopeJson;
}

export interface DeleteAccountResult {
  sessions: string[];
  devices: string[];
  rooms: LeaveResult[];
}

export interface PurgeResult {
  /** Sessions ended by idleness: their open streams must close too. */
  sessionIds: string[];
  envelopes: number;
  /** Attachments removed: unfinished uploads a day old, finished ones past their time to live. */
  attachments: number;
}

export interface PurgeOptions {
  /** How long a finished attachment is kept (ATTACHMENT_TTL_DAYS); 30 days when not given. */
  attachmentTtlMs?: number;
}

/** An attachment as stored: an upload under way, or a finished one. */
export interface AttachmentRecord {
  id: string;
  uploader: string;
  createdAt: number;
  /** null while the upload is under way. */
  finishedAt: number | null;
  /** The finish's stated size and SHA-256; null while uploading. */
  size: number | null;
  sha256: Uint8Array | null;
  /** The parts stored so far, by number. */
  parts: { n: number; bytes: number }[];
  /** Counts every part written, so that a finish can tell that the parts it checked are still those stored. */
  version: number;
}

export interface AttachmentPart {
  id: string;
  nick: string;
  n: number;
  data: Uint8Array;
  now: number;
  /** The uploader's quota: the bytes of its live attachments, this part included, may not exceed it. */
  quotaBytes: number;
  /**
   * The caller's session, when this request did not look it up (a session the instance
   * remembers): the write first confirms it is `nick`'s, and refuses 'unauthenticated' if not.
   */
  session?: string;
}

export interface AttachmentFinish {
  id: string;
  nick: string;
  /** The record's version the caller checked the parts of. */
  version: number;
  size: number;
  sha256: Uint8Array;
  now: number;
}

export interface InviteRecord {
  code: string;
  usesLeft: number;
  expiresAt: number | null;
  createdAt: number;
}

/** Counts for operators (admin stats, metrics): numbers only, never a nick or an id. */
export interface StoreStats {
  /** Accounts not deleted. */
  accounts: number;
  devices: number;
  rooms: number;
  /** Queue entries: one per envelope and target device still waiting for its ack. */
  queuedEnvelopes: number;
  /** Devices with a push subscription. */
  pushSubscriptions: number;
  /** Attachments stored, finished or not, and the bytes of their parts. */
  attachments: number;
  attachmentBytes: number;
}

/** How a store is opened (backends.ts). */
export interface StoreOpenOptions {
  /** false: refuse a store of an older schema version instead of upgrading it (the admin command). */
  upgrade?: boolean;
  /** The embedded store may settle writes before they are durable; see `Store.durable`. */
  settleBeforeSync?: boolean;
  /**
   * The store cannot go on (the disk refused an fsync): it refuses every write from then on and
   * tells its owner, which decides what the process does (the service stops, so that a restart
   * recovers from what is really on disk).
   */
  onFatal?: (err: unknown) => void;
}

export interface Store {
  readonly kind: 'sqlite' | 'postgres';
  /**
   * The send reads the caller's session and device with its facts, in the same round trip, when
   * SendInput.session is set (PostgreSQL), and an attachment's part confirms AttachmentPart.session
   * in its write: a send or a part of a session the instance remembers then needs no lookup of its
   * own. The embedded store answers lookups from memory and does not take it.
   */
  readonly confirmsCallerInSend: boolean;

  // meta: secrets shared by every instance
  getOrCreateMeta(key: string, make: () => string): Promise<string>;

  // accounts and sessions
  registerAccount(a: NewAccount): Promise<{ ok: true } | Refusal<'nick_taken' | 'invite_required' | 'invalid_invite'>>;
  getAccount(nick: string): Promise<AccountRecord | null>;
  /** true when the nick was ever registered (deleted accounts keep their nick retired). */
  nickExists(nick: string): Promise<boolean>;
  createInvite(code: string, uses: number, expiresAt: number | null, now: number): Promise<void>;
  /** Every invite, used up and expired ones too, oldest first. */
  listInvites(): Promise<InviteRecord[]>;
  /** Deletes an invite so that it no longer registers anyone; false when there was none. */
  revokeInvite(code: string): Promise<boolean>;
  createSession(s: { id: string; nick: string; now: number }): Promise<void>;
  getSession(id: string): Promise<SessionRecord | null>;
  touchSession(id: string, now: number): Promise<void>;
  deleteSession(id: string): Promise<void>;
  /** Stores new key material; ends every other session. Returns the ended session ids. */
  changePassword(nick: string, p: { authKeyHash: Uint8Array; kdf: Kdf; encryptedKey: EncryptedKey }, keepSession: string): Promise<string[]>;
  deleteAccount(nick: string, now: number): Promise<DeleteAccountResult>;

  // devices
  addDevice(
    nick: string,
    id: string,
    now: number,
  ): Promise<{ status: 'created' | 'exists'; device: DeviceRecord } | Refusal<'device_conflict' | 'limit_reached'>>;
  listDevices(nick: string): Promise<DeviceRecord[]>;
  deviceOwner(id: string): Promise<string | null>;
  deleteDevice(nick: string, id: string): Promise<boolean>;
  setPushSubscription(deviceId: string, sub: { endpoint: string; p256dh: string; auth: string }): Promise<void>;
  deletePushSubscription(deviceId: string): Promise<void>;
  /** Called when a stream opens: resets push-pending and records the time. */
  deviceConnected(deviceId: string, now: number): Promise<void>;
  /** Sets push-pending for those of `deviceIds` that have a subscription and a clear flag; returns them. */
  claimPush(deviceIds: string[]): Promise<PushTarget[]>;
  /** Deletes a subscription the push service declared gone (404/410), if it is still the same endpoint. */
  dropPushSubscription(deviceId: string, endpoint: string): Promise<void>;

  // contacts
  listContacts(nick: string): Promise<Contact[]>;
  addContact(
    nick: string,
    peer: string,
    now: number,
  ): Promise<{ status: 'created' | 'exists'; publicKey: string } | Refusal<'unknown_user' | 'limit_reached'>>;
  deleteContact(nick: string, peer: string): Promise<void>;

  // rooms
  listRooms(nick: string): Promise<Room[]>;
  createRoom(r: {
    id: string;
    name: string;
    owner: string;
    keyId: string;
    keys: WrappedKey[];
    now: number;
  }): Promise<{ room: Room; ownerDevices: string[] } | Refusal<'room_conflict' | 'limit_reached'>>;
  changeMembers(c: {
    roomId: string;
    caller: string;
    add: string[];
    remove: string[];
    keyId: string;
    keys: WrappedKey[];
    now: number;
  }): Promise<RoomFanout | Refusal<'not_owner' | 'unknown_user' | 'invalid' | 'owner' | 'key_exists' | 'keys_mismatch' | 'limit_reached'>>;
  leaveRoom(roomId: string, nick: string): Promise<LeaveResult>;
  deleteRoom(roomId: string, nick: string): Promise<{ deleted: boolean; members: { nick: string; devices: string[] }[] } | Refusal<'not_owner'>>;

  // messages and queues
  /**
   * Stores and queues one envelope in one transaction, deciding by the send rules (rules/send.ts)
   * on facts read inside it: a used id, the rights, the targets, the contacts of a first DM.
   * Before it decides, the store calls `admit` once with the facts of the send's target, as it
   * read them: the caller's message steps 5 and 6 (the rights by the same rules, then the rate
   * limit), which throw to refuse. A refused send writes nothing, and the promise rejects with
   * what `admit` threw.
   */
  sendMessage(m: SendInput, admit?: Admit): Promise<SendResult>;
  ack(deviceId: string, ids: string[]): Promise<void>;
  /** Queued envelopes of a device after `afterSeq`, oldest first, at most `limit`. */
  readQueue(deviceId: string, afterSeq: number, limit: number): Promise<QueuedEntry[]>;
  purge(now: number, o?: PurgeOptions): Promise<PurgeResult>;

  // attachments (opaque ciphertext in numbered parts; the rules are the domain's, attachments.ts)
  /** Stores part `n`, replacing an earlier upload of it; the first part makes the record. */
  putAttachmentPart(
    p: AttachmentPart,
  ): Promise<{ ok: true } | Refusal<'attachment_conflict' | 'attachment_finished' | 'quota_exceeded' | 'unauthenticated'>>;
  attachment(id: string): Promise<AttachmentRecord | null>;
  /** Up to `limit` parts from number `from` on, in order (the parts of a finished attachment are 0 to n - 1). */
  readAttachmentParts(id: string, from: number, limit: number): Promise<Uint8Array[]>;
  /**
   * Marks the upload finished with its size and hash, if it is still unfinished, the caller's, and
   * at `version`: 'changed' when not (a part was written since, or another finish came first).
   */
  finishAttachment(f: AttachmentFinish): Promise<'finished' | 'changed'>;
  deleteAttachment(id: string, nick: string): Promise<{ ok: true } | Refusal<'unknown_attachment' | 'not_uploader'>>;

  // durability
  /**
   * The answer barrier. A store may settle a write's promise before the write is durable (the
   * embedded store does, so that events need not wait for the disk); a request then takes
   * `lossMark()` before it writes and awaits `durable(mark)` before it answers (`whenDurable`,
   * domain/durability.ts). `durable` resolves once every write settled so far is durable, and
   * rejects if any write settled since the mark may have been lost. A store whose writes settle
   * durable resolves at once.
   */
  lossMark(): number;
  durable(mark: number): Promise<void>;
  /**
   * The weaker barrier of an attachment's part (docs/DESIGN.md): resolves once
   * every write settled so far is committed, so that it survives the service's process ending,
   * though perhaps not yet a power loss; rejects as `durable` does. The finish waits for
   * `durable`, which covers every part committed before it.
   */
  committed(mark: number): Promise<void>;

  // operations
  /** Cheap counts, read on every metrics scrape: each is a count over accounts, devices or rooms, never over messages. */
  stats(): Promise<StoreStats>;

  close(): Promise<void>;
}

export function isRefusal(v: unknown): v is Refusal {
  return typeof v === 'object' && v !== null && 'error' in v;
}
