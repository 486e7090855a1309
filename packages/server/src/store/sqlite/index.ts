/**
 * The embedded store: SQLite through better-sqlite3. Calls are synchronous underneath and
 * return promises only to satisfy the shared Store interface. Every change runs as one write of
 * the group commit (group-commit.ts), so it is atomic, and durable when its promise resolves (or,
 * opened with `settleBeforeSync`, once `durable()` resolves after it).
 */
import { LIMITS, type Contact, type EncryptedKey, type Kdf, type Room, type WrappedKey } from '@svc/protocol';
import type {
  Admit,
  AccountRecord,
  DeleteAccountResult,
  DeviceRecord,
  InviteRecord,
  LeaveResult,
  NewAccount,
  AttachmentFinish,
  AttachmentPart,
  AttachmentRecord,
  PurgeOptions,
  PurgeResult,
  PushTarget,
  QueuedEntry,
  Refusal,
  SendInput,
  SendResult,
  SessionRecord,
  Store,
  StoreOpenOptions,
  StoreStats,
} from '../types.js';
import { openDatabase, type Db } from './db.js';
import { Statements } from './statements.js';
import { GroupCommit } from './group-commit.js';
import { walDurability, type Durability } from './wal-sync.js';
import { Checkpointer } from './checkpointer.js';
import { Remembered } from './remembered.js';
import { TimeKeys } from './time-keys.js';
import * as accounts from './accounts.js';
import * as devices from './devices.js';
import * as contacts from './contacts.js';
import * as rooms from './rooms.js';
import * as messages from './messages.js';
import * as attachments from './attachments.js';

export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
  readonly confirmsCallerInSend = false;
  private readonly q: Statements;
  readonly group: GroupCommit;

  private readonly durability: Durability;
  private readonly checkpointer: Checkpointer;
  /** Rows read on every request or send, kept in memory (remembered.ts). */
  private readonly mem: Remembered;
  /** The next rowid of an envelope, from its time (time-keys.ts). */
  private readonly keys = new TimeKeys();

  constructor(
    readonly db: Db,
    o: StoreOpenOptions = {},
  ) {
    this.q = new Statements(db);
    this.mem = new Remembered(db, this.q);
    // COMMIT leaves the fsync to the group commit, which runs it off the event loop (wal-sync.ts).
    db.pragma('synchronous = NORMAL');
    this.durability = walDurability(db.name);
    this.group = new GroupCommit(db, this.durability, {
      onRollback: () => this.mem.forgetAll(),
      afterBegin: () => this.mem.forgetIfChangedElsewhere(),
      // The disk refused an fsync: nothing written since can be promised durable.
      ...(o.onFatal ? { onFatal: o.onFatal } : {}),
      settleBeforeSync: o.settleBeforeSync === true,
    });
    this.checkpointer = new Checkpointer(db);
    // The queue index is read at start (one scan of the queue) rather than by the first send.
    this.mem.queues.load();
  }

  /**
   * `upgrade: false` refuses a store of an older schema version instead of migrating it (db.ts).
   * `settleBeforeSync: true` settles each write when its statements are done and leaves the
   * wait for the disk to `durable()` (group-commit.ts); the service waits for it before it
   * answers (`whenDurable`, domain/durability.ts).
   */
  static open(path: string, o: StoreOpenOptions = {}): SqliteStore {
    return new SqliteStore(openDatabase(path, undefined, o), o);
  }

  /**
   * Every write goes through group commit: atomic on its own, and durable when the promise
   * resolves, or with `settleBeforeSync` once `durable()` has resolved after it. A write of one
   * statement, which nothing after it can fail, goes without a savepoint (`GroupCommit.run`).
   */
  private write<T>(fn: () => T): Promise<T> {
    return this.group.run(fn);
  }

  private writeOne<T>(fn: () => T): Promise<T> {
    return this.group.run(fn, true);
  }

  async getOrCreateMeta(key: string, make: () => string): Promise<string> {
    return this.write(() => {
      const row = this.q.one<{ value: string }>('SELECT value FROM meta WHERE key = ?', key);
      if (row) return row.value;
      const value = make();
      this.q.run('INSERT INTO meta (key, value) VALUES (?, ?)', key, value);
      return value;
    });
  }

  async registerAccount(a: NewAccount): Promise<{ ok: true } | Refusal<'nick_taken' | 'invite_required' | 'invalid_invite'>> {
    return this.write(() => accounts.registerAccount(this.q, a));
  }

  async getAccount(nick: string): Promise<AccountRecord | null> {
    return accounts.getAccount(this.q, nick);
  }

  async nickExists(nick: string): Promise<boolean> {
    return accounts.nickExists(this.q, nick);
  }

  async createInvite(code: string, uses: number, expiresAt: number | null, now: number): Promise<void> {
    await this.write(() => accounts.createInvite(this.q, code, uses, expiresAt, now));
  }

  async listInvites(): Promise<InviteRecord[]> {
    return accounts.listInvites(this.q);
  }

  async revokeInvite(code: string): Promise<boolean> {
    return this.write(() => accounts.revokeInvite(this.q, code));
  }

  async createSession(s: { id: string; nick: string; now: number }): Promise<void> {
    await this.write(() => accounts.createSession(this.q, s));
  }

  async getSession(id: string): Promise<SessionRecord | null> {
    const s = this.mem.sessions.get(id, () => accounts.loadSession(this.q, id));
    return s ? { ...s } : null;
  }

  async touchSession(id: string, now: number): Promise<void> {
    await this.writeOne(() => {
      this.mem.sessions.forget(id);
      accounts.touchSession(this.q, id, now);
    });
  }

  async deleteSession(id: string): Promise<void> {
    await this.writeOne(() => {
      this.mem.sessions.forget(id);
      accounts.deleteSession(this.q, id);
    });
  }

  async changePassword(nick: string, p: { authKeyHash: Uint8Array; kdf: Kdf; encryptedKey: EncryptedKey }, keepSession: string): Promise<string[]> {
    return this.write(() => {
      const ended = accounts.changePassword(this.q, nick, p, keepSession);
      this.mem.sessions.forget(ended);
      return ended;
    });
  }

  async deleteAccount(nick: string, now: number): Promise<DeleteAccountResult> {
    return this.write(() => {
      const r = accounts.deleteAccount(this.q, nick, now, (d) => this.dropQueue(d));
      this.mem.sessions.forget(r.sessions);
      this.mem.owners.forget(r.devices);
      this.mem.liveAccounts.forget(nick);
      // Rows of both directions went; forgetting them one by one would need them listed first.
      this.mem.contacts.clear();
      this.mem.deviceLists.clear();
      return r;
    });
  }

  async addDevice(nick: string, id: string, now: number) {
    return this.write(() => {
      const r = devices.addDevice(this.q, nick, id, now);
      if ('status' in r && r.status === 'created') this.mem.deviceLists.clear();
      return r;
    });
  }

  async listDevices(nick: string): Promise<DeviceRecord[]> {
    return devices.listDevices(this.q, nick);
  }

  async deviceOwner(id: string): Promise<string | null> {
    return this.mem.owners.get(id, () => devices.deviceOwner(this.q, id));
  }

  async deleteDevice(nick: string, id: string): Promise<boolean> {
    return this.write(() => {
      this.mem.owners.forget(id);
      this.mem.deviceLists.clear();
      if (!devices.deleteDevice(this.q, nick, id)) return false;
      this.dropQueue(id);
      return true;
    });
  }

  async setPushSubscription(deviceId: string, sub: { endpoint: string; p256dh: string; auth: string }): Promise<void> {
    await this.write(() => devices.setPushSubscription(this.pushChanged(), deviceId, sub));
  }

  async deletePushSubscription(deviceId: string): Promise<void> {
    await this.write(() => devices.deletePushSubscription(this.pushChanged(), deviceId));
  }

  async deviceConnected(deviceId: string, now: number): Promise<void> {
    await this.writeOne(() => devices.deviceConnected(this.pushChanged(), deviceId, now));
  }

  async claimPush(deviceIds: string[]): Promise<PushTarget[]> {
    if (deviceIds.length === 0) return [];
    return this.writeOne(() => devices.claimPush(this.pushChanged(), deviceIds));
  }

  async dropPushSubscription(deviceId: string, endpoint: string): Promise<void> {
    await this.write(() => devices.dropPushSubscription(this.pushChanged(), deviceId, endpoint));
  }

  async listContacts(nick: string): Promise<Contact[]> {
    return contacts.listContacts(this.q, nick);
  }

  async addContact(nick: string, peer: string, now: number) {
    return this.write(() => contacts.addContact(this.q, nick, peer, now));
  }

  async deleteContact(nick: string, peer: string): Promise<void> {
    await this.write(() => {
      this.mem.contacts.forget(`${nick} ${peer}`);
      contacts.deleteContact(this.q, nick, peer);
    });
  }

  async listRooms(nick: string): Promise<Room[]> {
    return rooms.listRooms(this.q, nick);
  }

  async createRoom(r: { id: string; name: string; owner: string; keyId: string; keys: WrappedKey[]; now: number }) {
    return this.write(() => rooms.createRoom(this.q, r));
  }

  async changeMembers(c: { roomId: string; caller: string; add: string[]; remove: string[]; keyId: string; keys: WrappedKey[]; now: number }) {
    return this.write(() => rooms.changeMembers(this.q, c));
  }

  async leaveRoom(roomId: string, nick: string): Promise<LeaveResult> {
    return this.write(() => rooms.leaveRoom(this.q, roomId, nick));
  }

  async deleteRoom(roomId: string, nick: string) {
    return this.write(() => rooms.deleteRoom(this.q, roomId, nick));
  }

  async sendMessage(m: SendInput, admit?: Admit): Promise<SendResult> {
    // The caller's checks come first, on facts read outside the write: the write itself cannot
    // wait for them. The rules are applied again inside it, on what it reads.
    if (admit) await admit(messages.targetFacts(this.q, this.mem.known, m.from, m.to, m.keyId));
    return this.write(() => messages.sendMessage(this.q, this.mem.known, this.mem.queues, this.keys, m));
  }

  async ack(deviceId: string, ids: string[]): Promise<void> {
    await this.writeOne(() => messages.ack(this.q, this.mem.queues, deviceId, ids));
  }

  async readQueue(deviceId: string, afterSeq: number, limit: number): Promise<QueuedEntry[]> {
    // An entry's seq here is its envelope's key (queue-index.ts).
    return messages.readQueue(this.q, this.mem.queues, deviceId, afterSeq, limit);
  }

  async purge(now: number, o: PurgeOptions = {}): Promise<PurgeResult> {
    return this.write(() => {
      const cutoff = now - LIMITS.sessionIdleMs;
      const sessionIds = this.q.all<{ id: string }>('SELECT id FROM sessions WHERE last_used_at < ?', cutoff).map((r) => r.id);
      this.mem.sessions.forget(sessionIds);
      this.q.run('DELETE FROM sessions WHERE last_used_at < ?', cutoff);
      const envelopes = messages.purgeEnvelopes(this.q, this.mem.queues, now);
      return { sessionIds, envelopes, attachments: attachments.purge(this.q, now, o.attachmentTtlMs ?? LIMITS.queueRetentionMs) };
    });
  }

  async putAttachmentPart(p: AttachmentPart) {
    return this.write(() => attachments.putPart(this.q, p));
  }

  async attachment(id: string): Promise<AttachmentRecord | null> {
    return attachments.get(this.q, id);
  }

  async readAttachmentParts(id: string, from: number, limit: number): Promise<Uint8Array[]> {
    return attachments.readParts(this.q, id, from, limit);
  }

  async finishAttachment(f: AttachmentFinish): Promise<'finished' | 'changed'> {
    return this.writeOne(() => attachments.finish(this.q, f));
  }

  async deleteAttachment(id: string, nick: string) {
    return this.write(() => attachments.remove(this.q, id, nick));
  }

  async stats(): Promise<StoreStats> {
    if (!this.db.inTransaction) this.mem.forgetIfChangedElsewhere();
    // The queue total is kept in memory by every queue change (queue-index.ts).
    const s = this.q.one<Omit<StoreStats, 'queuedEnvelopes'>>(
      `SELECT (SELECT COUNT(*) FROM accounts WHERE deleted_at IS NULL) AS accounts,
              (SELECT COUNT(*) FROM devices) AS devices,
              (SELECT COUNT(*) FROM rooms) AS rooms,
              (SELECT COUNT(*) FROM devices WHERE push_endpoint IS NOT NULL) AS pushSubscriptions,
              (SELECT COUNT(*) FROM attachments) AS attachments,
              (SELECT COALESCE(SUM(bytes), 0) FROM attachments) AS attachmentBytes`,
    )!;
    return {
      accounts: s.accounts,
      devices: s.devices,
      rooms: s.rooms,
      queuedEnvelopes: this.mem.queues.all(),
      pushSubscriptions: s.pushSubscriptions,
      attachments: s.attachments,
      attachmentBytes: s.attachmentBytes,
    };
  }

  /** Before a statement that changes a device's push state: whether it can be pushed is part of the cached device lists. */
  private pushChanged(): Statements {
    this.mem.deviceLists.clear();
    return this.q;
  }

  /** Deletes a device's queue, found through the index in memory (the file has none by device). */
  private dropQueue(deviceId: string): void {
    const keys = this.mem.queues.oldest(deviceId, Infinity);
    messages.deleteEntries(this.q, deviceId, keys);
    this.mem.queues.removed(deviceId, keys);
  }

  lossMark(): number {
    return this.group.lossMark();
  }

  durable(mark: number): Promise<void> {
    return this.group.durable(mark);
  }

  committed(mark: number): Promise<void> {
    return this.group.committed(mark);
  }

  async close(): Promise<void> {
    // Writes asked for in this turn of the event loop still commit, and are synced, before the file closes.
    if (!this.db.open) return;
    await this.group.close();
    await this.checkpointer.stop();
    this.durability.close();
    if (this.db.open) this.db.close();
  }
}
