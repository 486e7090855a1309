/**
 * The rows the SQLite store reads on every request or send, kept in memory (read-cache.ts,
 * queue-index.ts), and when to forget them. This process is the file's only writer, so what it
 * keeps stays true until one of its own writes changes it (each write forgets or updates what it
 * changes: index.ts), a rollback (everything), or another process's commit, the admin command's
 * (everything).
 */
import type Database from 'better-sqlite3';
import type { SessionRecord } from '../types.js';
import type { Db } from './db.js';
import type { Statements } from './statements.js';
import { ReadCache } from './read-cache.js';
import { QueueIndex } from './queue-index.js';
import { devicesOf, type DeviceTarget, type Known } from './messages.js';

export class Remembered {
  readonly sessions = new ReadCache<Readonly<SessionRecord>>();
  readonly owners = new ReadCache<string>();
  readonly liveAccounts = new ReadCache<true>();
  readonly contacts = new ReadCache<true>();
  /** Each account's devices as send targets; any change to any device row forgets them all. */
  readonly deviceLists = new ReadCache<readonly DeviceTarget[]>();
  /** Each device's queue entries. */
  readonly queues: QueueIndex;
  /** The facts the send path asks about, answered from the caches above. */
  readonly known: Known;
  private readonly dataVersion: Database.Statement;
  private seenVersion: number;

  constructor(db: Db, q: Statements) {
    this.queues = new QueueIndex(q);
    this.known = {
      liveAccount: (nick) =>
        this.liveAccounts.get(nick, () => (q.one('SELECT 1 FROM accounts WHERE nick = ? AND deleted_at IS NULL', nick) ? true : null)) === true,
      contact: (nick, peer) =>
        this.contacts.get(`${nick} ${peer}`, () => (q.one('SELECT 1 FROM contacts WHERE nick = ? AND peer = ?', nick, peer) ? true : null)) === true,
      devicesOf: (nick) => this.deviceLists.get(nick, () => devicesOf(q, nick))!,
    };
    this.dataVersion = db.prepare('PRAGMA data_version').pluck();
    this.seenVersion = this.dataVersion.get() as number;
  }

  /**
   * Another process (the admin command: purge, invites) committed to the file since we last
   * looked: what this process remembers about rows may be out of date, so it forgets it all.
   * PRAGMA data_version changes exactly then (not for our own commits, nor for checkpoints).
   */
  forgetIfChangedElsewhere(): void {
    const v = this.dataVersion.get() as number;
    if (v !== this.seenVersion) {
      this.seenVersion = v;
      this.forgetAll();
    }
  }

  /** After any rollback: what was read inside the rolled-back write may never have been committed. */
  forgetAll(): void {
    for (const c of [this.sessions, this.owners, this.liveAccounts, this.contacts, this.deviceLists, this.queues]) c.clear();
  }
}
