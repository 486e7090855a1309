/**
 * The networked store: PostgreSQL through a `pg` pool. Same behaviour as the SQLite store, but
 * several service instances may run against one database at once, so each multi-step change is
 * one transaction whose races are settled by the database (row locks, ON CONFLICT, advisory
 * locks; see locks.ts). Commits are synchronous (the server default), so an answered 202 is durable.
 */
import type pg from 'pg';
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
  SendInput,
  SendResult,
  SessionRecord,
  Store,
  StoreStats,
} from '../types.js';
import { Sql, autocommit, migrate, openPool, scriptedTransaction, transaction } from './db.js';
import * as accounts from './accounts.js';
import * as devices from './devices.js';
import * as rooms from './rooms.js';
import * as messages from './messages.js';
import * as attachments from './attachments.js';
import { Lookups } from './lookups.js';
import { SendBatcher } from './send-batch.js';
import { QueueCounts } from './queue-counts.js';
import { LockQueue } from './lock-queue.js';

export interface PostgresOptions {
  /** Puts every table in this schema (created when missing); tests use one per test. */
  schema?: string;
  /** Pool size (default 10). */
  max?: number;
  /** false: refuse a database of an older schema version instead of migrating it (a new one is always set up). */
  upgrade?: boolean;
  /** How long queue counts gather before they are written (queue-counts.ts; default 100 ms). */
  countIntervalMs?: number;
}

export class PostgresStore implements Store {
  readonly kind = 'postgres' as const;
  readonly confirmsCallerInSend = true;
  private readonly q: Sql;
  private readonly lookups: Lookups;
  private readonly sends: SendBatcher;
  private readonly counts: QueueCounts;
  private readonly waiting = new LockQueue();
  private closed = false;

  private constructor(
    readonly pool: pg.Pool,
    countIntervalMs?: number,
  ) {
    this.q = new Sql(pool);
    this.lookups = new Lookups(this.q);
    this.counts = new QueueCounts(pool, countIntervalMs);
    // A failed batch is not tried again as a batch: its sends go on the single path, which
    // retries a deadlock itself (send-batch.ts).
    this.sends = new SendBatcher(
      (ms) => this.sendAndCount(ms, 1),
      async (p) => (await this.sendAndCount([p]))[0]!,
    );
  }

  private async sendAndCount(ms: messages.PendingSend[], attempts?: number): Promise<messages.SendOutcome[]> {
    const { outcomes, added } = await scriptedTransaction(this.pool, (q) => messages.sendMessages(q, ms), attempts);
    this.counts.add(added);
    return outcomes;
  }

  /** Writes the queue counts this instance has gathered (queue-counts.ts); stats and close do it first. */
  async flushQueueCounts(): Promise<void> {
    await this.counts.flush();
  }

  /** Connects, applies missing migrations (refusing a newer schema) and returns the store. */
  static async open(url: string, opts: PostgresOptions = {}): Promise<PostgresStore> {
    const pool = openPool(url, opts);
    try {
      await migrate(pool, opts.schema, undefined, opts.upgrade ?? true);
    } catch (e) {
      await pool.end();
      throw e;
    }
    return new PostgresStore(pool, opts.countIntervalMs);
  }

  private tx<T>(fn: (q: Sql) => Promise<T>): Promise<T> {
    return transaction(this.pool, fn);
  }

  async getOrCreateMeta(key: string, make: () => string): Promise<string> {
    const found = await this.q.one<{ value: string }>('SELECT value FROM meta WHERE key = $1', [key]);
    if (found) return found.value;
    // Instances starting together may both get here: the first insert wins, and every one of
    // them returns the stored value, never its own candidate.
    await this.q.run('INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING', [key, make()]);
    return (await this.q.one<{ value: string }>('SELECT value FROM meta WHERE key = $1', [key]))!.value;
  }

  async registerAccount(a: NewAccount) {
    return this.tx((q) => accounts.registerAccount(q, a));
  }

  async getAccount(nick: string): Promise<AccountRecord | null> {
    return accounts.getAccount(this.q, nick);
  }

  async nickExists(nick: string): Promise<boolean> {
    return (await this.q.one('SELECT 1 FROM accounts WHERE nick = $1', [nick])) !== undefined;
  }

  async createInvite(code: string, uses: number, expiresAt: number | null, now: number): Promise<void> {
    await this.q.run('INSERT INTO invites (code, uses_left, expires_at, created_at) VALUES ($1, $2, $3, $4)', [code, uses, expiresAt, now]);
  }

  async listInvites(): Promise<InviteRecord[]> {
    return this.q.all<InviteRecord>(
      'SELECT code, uses_left AS "usesLeft", expires_at AS "expiresAt", created_at AS "createdAt" FROM invites ORDER BY created_at, code',
    );
  }

  async revokeInvite(code: string): Promise<boolean> {
    return (await this.q.run('DELETE FROM invites WHERE code = $1', [code])) > 0;
  }

  async createSession(s: { id: string; nick: string; now: number }): Promise<void> {
    await this.q.run('INSERT INTO sessions (id, nick, created_at, last_used_at) VALUES ($1, $2, $3, $3)', [s.id, s.nick, s.now]);
  }

  async getSession(id: string): Promise<SessionRecord | null> {
    return this.lookups.session(id);
  }

  async touchSession(id: string, now: number): Promise<void> {
    await this.q.run('UPDATE sessions SET last_used_at = $2 WHERE id = $1', [id, now]);
  }

  async deleteSession(id: string): Promise<void> {
    await this.q.run('DELETE FROM sessions WHERE id = $1', [id]);
  }

  async changePassword(nick: string, p: { authKeyHash: Uint8Array; kdf: Kdf; encryptedKey: EncryptedKey }, keepSession: string): Promise<string[]> {
    return this.tx((q) => accounts.changePassword(q, nick, p, keepSession));
  }

  async deleteAccount(nick: string, now: number): Promise<DeleteAccountResult> {
    return this.tx((q) => accounts.deleteAccount(q, nick, now));
  }

  async addDevice(nick: string, id: string, now: number) {
    return this.tx((q) => devices.addDevice(q, nick, id, now));
  }

  async listDevices(nick: string): Promise<DeviceRecord[]> {
    return devices.listDevices(this.q, nick);
  }

  async deviceOwner(id: string): Promise<string | null> {
    return this.lookups.deviceOwner(id);
  }

  async deleteDevice(nick: string, id: string): Promise<boolean> {
    return this.tx((q) => devices.deleteDevice(q, nick, id));
  }

  async setPushSubscription(deviceId: string, sub: { endpoint: string; p256dh: string; auth: string }): Promise<void> {
    await this.q.run('UPDATE devices SET push_endpoint = $2, push_p256dh = $3, push_auth = $4, push_pending = FALSE WHERE id = $1', [
      deviceId,
      sub.endpoint,
      sub.p256dh,
      sub.auth,
    ]);
  }

  async deletePushSubscription(deviceId: string): Promise<void> {
    await this.q.run('UPDATE devices SET push_endpoint = NULL, push_p256dh = NULL, push_auth = NULL, push_pending = FALSE WHERE id = $1', [deviceId]);
  }

  async deviceConnected(deviceId: string, now: number): Promise<void> {
    // Also trims and counts its queue before the replay reads it (migration 5).
    await this.q.run('SELECT device_connected($1, $2, $3)', [deviceId, now, LIMITS.queuePerDevice]);
  }

  async claimPush(deviceIds: string[]): Promise<PushTarget[]> {
    if (deviceIds.length === 0) return [];
    return devices.claimPush(this.q, deviceIds);
  }

  async dropPushSubscription(deviceId: string, endpoint: string): Promise<void> {
    await this.q.run(
      'UPDATE devices SET push_endpoint = NULL, push_p256dh = NULL, push_auth = NULL, push_pending = FALSE WHERE id = $1 AND push_endpoint = $2',
      [deviceId, endpoint],
    );
  }

  async listContacts(nick: string): Promise<Contact[]> {
    return devices.listContacts(this.q, nick);
  }

  async addContact(nick: string, peer: string, now: number) {
    return this.tx((q) => devices.addContact(q, nick, peer, now));
  }

  async deleteContact(nick: string, peer: string): Promise<void> {
    await this.q.run('DELETE FROM contacts WHERE nick = $1 AND peer = $2', [nick, peer]);
  }

  async listRooms(nick: string): Promise<Room[]> {
    return rooms.listRooms(this.q, nick);
  }

  async createRoom(r: { id: string; name: string; owner: string; keyId: string; keys: WrappedKey[]; now: number }) {
    return this.waiting.run(`rooms:${r.owner}`, () => this.tx((q) => rooms.createRoom(q, r)));
  }

  async changeMembers(c: { roomId: string; caller: string; add: string[]; remove: string[]; keyId: string; keys: WrappedKey[]; now: number }) {
    return this.waiting.run(`room:${c.roomId}`, () => this.tx((q) => rooms.changeMembers(q, c)));
  }

  async leaveRoom(roomId: string, nick: string): Promise<LeaveResult> {
    return this.tx((q) => rooms.leaveRoom(q, roomId, nick));
  }

  async deleteRoom(roomId: string, nick: string) {
    return this.tx((q) => rooms.deleteRoom(q, roomId, nick));
  }

  async sendMessage(m: SendInput, admit?: Admit): Promise<SendResult> {
    return this.sends.send(m, admit);
  }

  async ack(deviceId: string, ids: string[]): Promise<void> {
    await autocommit(this.pool, (q) => messages.ack(q, deviceId, ids));
  }

  async readQueue(deviceId: string, afterSeq: number, limit: number): Promise<QueuedEntry[]> {
    return messages.readQueue(this.q, deviceId, afterSeq, limit);
  }

  async purge(now: number, o: PurgeOptions = {}): Promise<PurgeResult> {
    return this.tx(async (q) => {
      const sessionIds = await accounts.purgeSessions(q, now - LIMITS.sessionIdleMs);
      const envelopes = await messages.purgeEnvelopes(q, now);
      return { sessionIds, envelopes, attachments: await attachments.purge(q, now, o.attachmentTtlMs ?? LIMITS.queueRetentionMs) };
    });
  }

  async putAttachmentPart(p: AttachmentPart) {
    return this.waiting.run(`attachments:${p.nick}`, () => autocommit(this.pool, (q) => attachments.putPart(q, p)));
  }

  async attachment(id: string): Promise<AttachmentRecord | null> {
    return attachments.get(this.q, id);
  }

  async readAttachmentParts(id: string, from: number, limit: number): Promise<Uint8Array[]> {
    return attachments.readParts(this.pool, id, from, limit);
  }

  async finishAttachment(f: AttachmentFinish): Promise<'finished' | 'changed'> {
    return attachments.finish(this.q, f);
  }

  async deleteAttachment(id: string, nick: string) {
    return this.tx((q) => attachments.remove(q, id, nick));
  }

  async stats(): Promise<StoreStats> {
    // queue_len may lag other instances' sends by a moment (queue-counts.ts); the queue itself is
    // never scanned here.
    await this.counts.flush();
    return (await this.q.one<StoreStats>(
      `SELECT (SELECT COUNT(*) FROM accounts WHERE deleted_at IS NULL) AS accounts,
              (SELECT COUNT(*) FROM devices) AS devices,
              (SELECT COUNT(*) FROM rooms) AS rooms,
              (SELECT COALESCE(SUM(queue_len), 0) FROM queue_lengths) AS "queuedEnvelopes",
              (SELECT COUNT(*) FROM devices WHERE push_endpoint IS NOT NULL) AS "pushSubscriptions",
              (SELECT COUNT(*) FROM attachments) AS attachments,
              (SELECT COALESCE(SUM(bytes), 0)::BIGINT FROM attachments) AS "attachmentBytes"`,
    ))!;
  }

  /** A write's promise settles only once PostgreSQL has committed it: nothing to wait for. */
  lossMark(): number {
    return 0;
  }

  async durable(_mark: number): Promise<void> {}

  /** A part's write commits without waiting for the WAL's flush (migration 11); the finish's synchronous commit flushes it. */
  async committed(_mark: number): Promise<void> {}

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.counts.flush();
    await this.pool.end();
  }
}
