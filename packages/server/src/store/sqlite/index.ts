/**
 * The embedded store: SQLite through better-sqlite3. Calls are synchronous underneath and
 * return promises only to satisfy the shared Store interface. Every change runs as one write of
 * the group commit (group-commit.ts), so it is atomic, and durable when its promise resolves (or,
 * opened with `settleBeforeSync`, once `durable()` resolves after it).
 */
import { LIMITS, type Contact, type EncryptedKey, type Kdf, type Room, type WrappedKey } from '@svc/protocol';
import { ACCOUNT_COLUMNS, accountFromRow, type AccountRow } from '../rows.js';
import type {
  Admit,
  AccountRecord,
  DeleteAccountResult,
  DeviceRecord,
  InviteRecord,
  LeaveResult,
  NewAccount,
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
import type Database from 'better-sqlite3';
import { openDatabase, type Db } from './db.js';
import { Statements, placeholders } from './statements.js';
import { GroupCommit } from './group-commit.js';
import { walDurability, type Durability } from './wal-sync.js';
import { ReadCache } from './read-cache.js';
import { Checkpointer } from './checkpointer.js';
import { QueueIndex } from './queue-index.js';
import * as rooms from './rooms.js';
import * as messages from './messages.js';

interface DeviceRow {
  id: string;
  nick: string;
  created_at: number;
  last_seen_at: number | null;
  push: number;
}

const toDevice = (r: DeviceRow): DeviceRecord => ({
  id: r.id,
  nick: r.nick,
  createdAt: r.created_at,
  lastSeenAt: r.last_seen_at,
  push: r.push === 1,
});
const DEVICE_COLS = 'id, nick, created_at, last_seen_at, (push_endpoint IS NOT NULL) AS push';

export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
  private readonly q: Statements;
  readonly group: GroupCommit;

  private readonly durability: Durability;
  private readonly checkpointer: Checkpointer;
  private readonly dataVersion: Database.Statement;
  private seenVersion: number;
  /** Rows read on every request or send, remembered (read-cache.ts). */
  private readonly sessions = new ReadCache<Readonly<SessionRecord>>();
  private readonly owners = new ReadCache<string>();
  private readonly liveAccounts = new ReadCache<true>();
  private readonly contacts = new ReadCache<true>();
  /** Each account's devices as send targets; any change to any device row forgets them all. */
  private readonly deviceLists = new ReadCache<readonly messages.DeviceTarget[]>();
  private readonly queues: QueueIndex;
  private readonly known: messages.Known = {
    liveAccount: (nick) =>
      this.liveAccounts.get(nick, () => (this.q.one('SELECT 1 FROM accounts WHERE nick = ? AND deleted_at IS NULL', nick) ? true : null)) === true,
    contact: (nick, peer) =>
      this.contacts.get(`${nick} ${peer}`, () => (this.q.one('SELECT 1 FROM contacts WHERE nick = ? AND peer = ?', nick, peer) ? true : null)) ===
      true,
    devicesOf: (nick) => this.deviceLists.get(nick, () => messages.devicesOf(this.q, nick))!,
  };

  constructor(
    readonly db: Db,
    o: StoreOpenOptions = {},
  ) {
    this.q = new Statements(db);
    this.queues = new QueueIndex(this.q);
    // COMMIT leaves the fsync to the group commit, which runs it off the event loop (wal-sync.ts).
    db.pragma('synchronous = NORMAL');
    this.durability = walDurability(db.name);
    this.dataVersion = db.prepare('PRAGMA data_version').pluck();
    this.seenVersion = this.dataVersion.get() as number;
    this.group = new GroupCommit(db, this.durability, {
      onRollback: () => this.forgetAll(),
      beforeBatch: () => this.forgetIfChangedElsewhere(),
      // The disk refused an fsync: nothing written since can be promised durable.
      ...(o.onFatal ? { onFatal: o.onFatal } : {}),
      settleBeforeSync: o.settleBeforeSync === true,
    });
    this.checkpointer = new Checkpointer(db);
    // The queue index is read at start (one scan of the queue) rather than by the first send.
    this.queues.load();
  }

  /**
   * Another process (the admin command: purge, invites) committed to the file since we last
   * looked: what this process remembers about rows may be out of date, so it forgets it all.
   * PRAGMA data_version changes exactly then (not for our own commits, nor for checkpoints).
   */
  private forgetIfChangedElsewhere(): void {
    const v = this.dataVersion.get() as number;
    if (v !== this.seenVersion) {
      this.seenVersion = v;
      this.forgetAll();
    }
  }

  /** After any rollback: what was read inside the rolled-back write may never have been committed. */
  private forgetAll(): void {
    for (const c of [this.sessions, this.owners, this.liveAccounts, this.contacts, this.deviceLists, this.queues]) c.clear();
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
   * resolves, or with `settleBeforeSync` once `durable()` has resolved after it.
   */
  private write<T>(fn: () => T): Promise<T> {
    return this.group.run(fn);
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
    return this.write(() => {
      if (a.requireInvite) {
        if (a.invite === null) return { error: 'invite_required' as const };
        const inv = this.q.one<{ uses_left: number; expires_at: number | null }>(
          'SELECT uses_left, expires_at FROM invites WHERE code = ?',
          a.invite,
        );
        if (!inv || inv.uses_left <= 0 || (inv.expires_at !== null && inv.expires_at <= a.now)) return { error: 'invalid_invite' as const };
      }
      if (this.q.one('SELECT 1 FROM accounts WHERE nick = ?', a.nick)) return { error: 'nick_taken' as const };
      // The invite use is consumed in the same transaction that creates the account.
      if (a.requireInvite) this.q.run('UPDATE invites SET uses_left = uses_left - 1 WHERE code = ?', a.invite);
      this.q.run(
        'INSERT INTO accounts (nick, auth_key_hash, kdf, public_key, encrypted_key, created_at) VALUES (?, ?, ?, ?, ?, ?)',
        a.nick,
        Buffer.from(a.authKeyHash),
        JSON.stringify(a.kdf),
        a.publicKey,
        JSON.stringify(a.encryptedKey),
        a.now,
      );
      this.q.run('INSERT INTO sessions (id, nick, created_at, last_used_at) VALUES (?, ?, ?, ?)', a.sessionId, a.nick, a.now, a.now);
      return { ok: true as const };
    });
  }

  async getAccount(nick: string): Promise<AccountRecord | null> {
    const r = this.q.one<AccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE nick = ? AND deleted_at IS NULL`, nick);
    if (!r) return null;
    return accountFromRow(r);
  }

  async nickExists(nick: string): Promise<boolean> {
    return this.q.one('SELECT 1 FROM accounts WHERE nick = ?', nick) !== undefined;
  }

  async createInvite(code: string, uses: number, expiresAt: number | null, now: number): Promise<void> {
    await this.write(() =>
      this.q.run('INSERT INTO invites (code, uses_left, expires_at, created_at) VALUES (?, ?, ?, ?)', code, uses, expiresAt, now),
    );
  }

  async listInvites(): Promise<InviteRecord[]> {
    return this.q.all<InviteRecord>(
      'SELECT code, uses_left AS usesLeft, expires_at AS expiresAt, created_at AS createdAt FROM invites ORDER BY created_at, code',
    );
  }

  async revokeInvite(code: string): Promise<boolean> {
    return this.write(() => this.q.run('DELETE FROM invites WHERE code = ?', code).changes > 0);
  }

  async createSession(s: { id: string; nick: string; now: number }): Promise<void> {
    await this.write(() => this.q.run('INSERT INTO sessions (id, nick, created_at, last_used_at) VALUES (?, ?, ?, ?)', s.id, s.nick, s.now, s.now));
  }

  async getSession(id: string): Promise<SessionRecord | null> {
    const s = this.sessions.get(id, () => {
      const r = this.q.one<{ id: string; nick: string; created_at: number; last_used_at: number }>(
        'SELECT id, nick, created_at, last_used_at FROM sessions WHERE id = ?',
        id,
      );
      return r ? { id: r.id, nick: r.nick, createdAt: r.created_at, lastUsedAt: r.last_used_at } : null;
    });
    return s ? { ...s } : null;
  }

  async touchSession(id: string, now: number): Promise<void> {
    await this.write(() => {
      this.sessions.forget(id);
      this.q.run('UPDATE sessions SET last_used_at = ? WHERE id = ?', now, id);
    });
  }

  async deleteSession(id: string): Promise<void> {
    await this.write(() => {
      this.sessions.forget(id);
      this.q.run('DELETE FROM sessions WHERE id = ?', id);
    });
  }

  async changePassword(nick: string, p: { authKeyHash: Uint8Array; kdf: Kdf; encryptedKey: EncryptedKey }, keepSession: string): Promise<string[]> {
    return this.write(() => {
      this.q.run(
        'UPDATE accounts SET auth_key_hash = ?, kdf = ?, encrypted_key = ? WHERE nick = ?',
        Buffer.from(p.authKeyHash),
        JSON.stringify(p.kdf),
        JSON.stringify(p.encryptedKey),
        nick,
      );
      const ended = this.q.all<{ id: string }>('SELECT id FROM sessions WHERE nick = ? AND id <> ?', nick, keepSession).map((r) => r.id);
      this.sessions.forget(ended);
      this.q.run('DELETE FROM sessions WHERE nick = ? AND id <> ?', nick, keepSession);
      return ended;
    });
  }

  async deleteAccount(nick: string, now: number): Promise<DeleteAccountResult> {
    return this.write(() => {
      const roomResults: LeaveResult[] = rooms.roomsOf(this.q, nick).map((id) => rooms.leaveRoom(this.q, id, nick));
      const sessions = this.q.all<{ id: string }>('SELECT id FROM sessions WHERE nick = ?', nick).map((r) => r.id);
      const devices = rooms.devicesOf(this.q, nick);
      this.sessions.forget(sessions);
      this.owners.forget(devices);
      this.liveAccounts.forget(nick);
      // Rows of both directions go; forgetting them one by one would need them listed first.
      this.contacts.clear();
      this.q.run('DELETE FROM sessions WHERE nick = ?', nick);
      for (const d of devices) this.dropQueue(d);
      this.q.run('DELETE FROM devices WHERE nick = ?', nick);
      this.deviceLists.clear();
      this.q.run('DELETE FROM contacts WHERE nick = ? OR peer = ?', nick, nick);
      this.q.run(
        'UPDATE accounts SET auth_key_hash = NULL, kdf = NULL, public_key = NULL, encrypted_key = NULL, deleted_at = ? WHERE nick = ?',
        now,
        nick,
      );
      return { sessions, devices, rooms: roomResults };
    });
  }

  async addDevice(nick: string, id: string, now: number) {
    return this.write((): { status: 'created' | 'exists'; device: DeviceRecord } | Refusal<'device_conflict' | 'limit_reached'> => {
      const row = this.q.one<DeviceRow>(`SELECT ${DEVICE_COLS} FROM devices WHERE id = ?`, id);
      if (row) return row.nick === nick ? { status: 'exists', device: toDevice(row) } : { error: 'device_conflict' };
      const n = this.q.one<{ n: number }>('SELECT COUNT(*) AS n FROM devices WHERE nick = ?', nick)!.n;
      if (n >= LIMITS.devicesPerAccount) return { error: 'limit_reached' };
      this.q.run('INSERT INTO devices (id, nick, created_at) VALUES (?, ?, ?)', id, nick, now);
      this.deviceLists.clear();
      return { status: 'created', device: { id, nick, createdAt: now, lastSeenAt: null, push: false } };
    });
  }

  async listDevices(nick: string): Promise<DeviceRecord[]> {
    return this.q.all<DeviceRow>(`SELECT ${DEVICE_COLS} FROM devices WHERE nick = ? ORDER BY seq`, nick).map(toDevice);
  }

  async deviceOwner(id: string): Promise<string | null> {
    return this.owners.get(id, () => this.q.one<{ nick: string }>('SELECT nick FROM devices WHERE id = ?', id)?.nick ?? null);
  }

  async deleteDevice(nick: string, id: string): Promise<boolean> {
    return this.write(() => {
      this.owners.forget(id);
      this.deviceLists.clear();
      const r = this.q.run('DELETE FROM devices WHERE id = ? AND nick = ?', id, nick);
      if (r.changes === 0) return false;
      this.dropQueue(id);
      return true;
    });
  }

  async setPushSubscription(deviceId: string, sub: { endpoint: string; p256dh: string; auth: string }): Promise<void> {
    await this.write(() =>
      this.pushChanged().run(
        'UPDATE devices SET push_endpoint = ?, push_p256dh = ?, push_auth = ?, push_pending = 0 WHERE id = ?',
        sub.endpoint,
        sub.p256dh,
        sub.auth,
        deviceId,
      ),
    );
  }

  async deletePushSubscription(deviceId: string): Promise<void> {
    await this.write(() =>
      this.pushChanged().run(
        'UPDATE devices SET push_endpoint = NULL, push_p256dh = NULL, push_auth = NULL, push_pending = 0 WHERE id = ?',
        deviceId,
      ),
    );
  }

  async deviceConnected(deviceId: string, now: number): Promise<void> {
    await this.write(() => this.pushChanged().run('UPDATE devices SET push_pending = 0, last_seen_at = ? WHERE id = ?', now, deviceId));
  }

  async claimPush(deviceIds: string[]): Promise<PushTarget[]> {
    if (deviceIds.length === 0) return [];
    // One UPDATE … RETURNING: the flag is read and set in a single atomic step.
    return this.write(() =>
      this.pushChanged().all<PushTarget>(
        `UPDATE devices SET push_pending = 1
         WHERE id IN (${placeholders(deviceIds.length)}) AND push_pending = 0 AND push_endpoint IS NOT NULL
         RETURNING id AS deviceId, push_endpoint AS endpoint, push_p256dh AS p256dh, push_auth AS auth`,
        ...deviceIds,
      ),
    );
  }

  async dropPushSubscription(deviceId: string, endpoint: string): Promise<void> {
    await this.write(() =>
      this.pushChanged().run(
        'UPDATE devices SET push_endpoint = NULL, push_p256dh = NULL, push_auth = NULL, push_pending = 0 WHERE id = ? AND push_endpoint = ?',
        deviceId,
        endpoint,
      ),
    );
  }

  async listContacts(nick: string): Promise<Contact[]> {
    return this.q.all<Contact>(
      `SELECT c.peer AS nick, a.public_key AS publicKey, c.created_at AS createdAt FROM contacts c
       JOIN accounts a ON a.nick = c.peer WHERE c.nick = ? AND a.deleted_at IS NULL ORDER BY c.seq`,
      nick,
    );
  }

  async addContact(nick: string, peer: string, now: number) {
    return this.write((): { status: 'created' | 'exists'; publicKey: string } | Refusal<'unknown_user' | 'limit_reached'> => {
      const acc = this.q.one<{ public_key: string }>('SELECT public_key FROM accounts WHERE nick = ? AND deleted_at IS NULL', peer);
      if (!acc) return { error: 'unknown_user' };
      if (this.q.one('SELECT 1 FROM contacts WHERE nick = ? AND peer = ?', nick, peer)) return { status: 'exists', publicKey: acc.public_key };
      const n = this.q.one<{ n: number }>('SELECT COUNT(*) AS n FROM contacts WHERE nick = ?', nick)!.n;
      if (n >= LIMITS.contactsPerAccount) return { error: 'limit_reached' };
      this.q.run('INSERT INTO contacts (nick, peer, created_at) VALUES (?, ?, ?)', nick, peer, now);
      return { status: 'created', publicKey: acc.public_key };
    });
  }

  async deleteContact(nick: string, peer: string): Promise<void> {
    await this.write(() => {
      this.contacts.forget(`${nick} ${peer}`);
      this.q.run('DELETE FROM contacts WHERE nick = ? AND peer = ?', nick, peer);
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
    if (admit) await admit(messages.targetFacts(this.q, this.known, m.from, m.to, m.keyId));
    return this.write(() => messages.sendMessage(this.q, this.known, this.queues, m));
  }

  async ack(deviceId: string, ids: string[]): Promise<void> {
    await this.write(() => messages.ack(this.q, this.queues, deviceId, ids));
  }

  async readQueue(deviceId: string, afterSeq: number, limit: number): Promise<QueuedEntry[]> {
    return messages.readQueue(this.q, this.queues, deviceId, afterSeq, limit);
  }

  async purge(now: number): Promise<PurgeResult> {
    return this.write(() => {
      const cutoff = now - LIMITS.sessionIdleMs;
      const sessionIds = this.q.all<{ id: string }>('SELECT id FROM sessions WHERE last_used_at < ?', cutoff).map((r) => r.id);
      this.sessions.forget(sessionIds);
      this.q.run('DELETE FROM sessions WHERE last_used_at < ?', cutoff);
      const envelopes = messages.purgeEnvelopes(this.q, this.queues, now);
      return { sessionIds, envelopes };
    });
  }

  async stats(): Promise<StoreStats> {
    if (!this.db.inTransaction) this.forgetIfChangedElsewhere();
    // The queue total is kept in memory by every queue change (queue-index.ts).
    const s = this.q.one<Omit<StoreStats, 'queuedEnvelopes'>>(
      `SELECT (SELECT COUNT(*) FROM accounts WHERE deleted_at IS NULL) AS accounts,
              (SELECT COUNT(*) FROM devices) AS devices,
              (SELECT COUNT(*) FROM rooms) AS rooms,
              (SELECT COUNT(*) FROM devices WHERE push_endpoint IS NOT NULL) AS pushSubscriptions`,
    )!;
    return { accounts: s.accounts, devices: s.devices, rooms: s.rooms, queuedEnvelopes: this.queues.all(), pushSubscriptions: s.pushSubscriptions };
  }

  /** Before a statement that changes a device's push state: whether it can be pushed is part of the cached device lists. */
  private pushChanged(): Statements {
    this.deviceLists.clear();
    return this.q;
  }

  /** Deletes a device's queue, found through the index in memory (the file has none by device). */
  private dropQueue(deviceId: string): void {
    const seqs = this.queues.oldest(deviceId, Infinity);
    messages.deleteSeqs(this.q, seqs);
    this.queues.removed(deviceId, seqs);
  }

  lossMark(): number {
    return this.group.lossMark();
  }

  durable(mark: number): Promise<void> {
    return this.group.durable(mark);
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
