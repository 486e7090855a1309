/**
 * Group commit for the embedded store. With synchronous=FULL every COMMIT waits for an fsync,
 * and better-sqlite3 waits for it on the event loop: one commit per request caps the service at
 * one request per fsync, however many are waiting. Instead:
 *
 * - Every write asked for during one turn of the event loop is queued and run at the end of that
 *   turn (setImmediate), each inside its own savepoint of one open transaction. A write whose
 *   own statements fail is rolled back to its savepoint and rejected alone; the others go on.
 * - The transaction is committed when no sync is under way; otherwise it stays open, and the
 *   writes of the following turns join it, until the sync ends. So there is one COMMIT and one
 *   fsync per sync cycle, however many writes arrive meanwhile: under load, batches grow by
 *   themselves instead of each turn paying a commit of its own. Nothing is delayed by this: a
 *   write committed during a sync could not be answered before the next sync anyway.
 * - No promise resolves before its COMMIT has returned and the WAL holding it has been synced
 *   to disk (wal-sync.ts: the sync runs off the event loop), so an answered request survives a
 *   power loss.
 *
 * Reads are not queued: they run at once on the same connection, so they may see writes that
 * are not yet committed or not yet synced. Their own clients have no answer yet; if the commit
 * or the sync fails (or the power does), those writes are refused or lost, and their clients
 * send them again (a retried message id is answered as a retry).
 */
import type Database from 'better-sqlite3';
import type { Db } from './db.js';
import type { Durability } from './wal-sync.js';

interface Job {
  fn: () => unknown;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

interface Done {
  job: Job;
  value: unknown;
}

export class GroupCommit {
  private queue: Job[] = [];
  private scheduled = false;
  /** Writes done in the open transaction, not yet committed. */
  private open: Done[] = [];
  /** The sync under way, if any; it settles when its writes have been answered. */
  private syncing: Promise<void> | null = null;
  private readonly begin: Database.Statement;
  private readonly commitStmt: Database.Statement;
  private readonly rollback: Database.Statement;
  private readonly savepoint: Database.Statement;
  private readonly release: Database.Statement;
  private readonly rollbackTo: Database.Statement;
  /** Commits, syncs and writes since the store opened, for tests and the benchmark's notes. */
  commits = 0;
  syncs = 0;
  writes = 0;

  constructor(
    private readonly db: Db,
    private readonly durability: Durability,
    /** Called whenever any write is rolled back, so that what was read inside it can be forgotten. */
    private readonly onRollback: () => void = () => {},
  ) {
    this.begin = db.prepare('BEGIN IMMEDIATE');
    this.commitStmt = db.prepare('COMMIT');
    this.rollback = db.prepare('ROLLBACK');
    this.savepoint = db.prepare('SAVEPOINT w');
    this.release = db.prepare('RELEASE w');
    this.rollbackTo = db.prepare('ROLLBACK TO w');
  }

  /** Runs `fn` (synchronous statements only) in a group transaction; resolves once it is committed and synced. */
  run<T>(fn: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (v: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Runs every queued write now, and commits unless a sync is under way. */
  flush(): void {
    this.scheduled = false;
    const jobs = this.queue;
    this.queue = [];
    for (const job of jobs) this.runJob(job);
    if (!this.syncing) this.commitAndSync();
  }

  /** One write in its own savepoint of the open transaction (begun if none is open). */
  private runJob(job: Job): void {
    if (!this.db.inTransaction) {
      try {
        this.begin.run();
      } catch (err) {
        job.reject(err);
        return;
      }
    }
    try {
      this.savepoint.run();
      const value = job.fn();
      this.release.run();
      this.open.push({ job, value });
      return;
    } catch (err) {
      job.reject(err);
      this.onRollback();
      if (this.db.inTransaction) {
        try {
          this.rollbackTo.run();
          this.release.run();
          return;
        } catch {
          // The savepoint is beyond repair: give up the whole transaction below.
          this.rollback.run();
        }
      }
      // SQLite gave up the whole transaction (disk full, I/O error): the writes done in it
      // before this one are lost with it. The next write begins a fresh transaction.
      this.loseOpen(err);
    }
  }

  private loseOpen(err: unknown): void {
    for (const d of this.open) d.job.reject(err);
    this.open = [];
  }

  /** Commits the open transaction and syncs it; when the sync ends, does the same for what joined meanwhile. */
  private commitAndSync(): void {
    if (!this.db.inTransaction) return;
    try {
      this.commitStmt.run();
    } catch (err) {
      if (this.db.inTransaction) this.rollback.run();
      this.onRollback();
      this.loseOpen(err);
      return;
    }
    const batch = this.open;
    this.open = [];
    if (batch.length === 0) return;
    this.commits++;
    this.writes += batch.length;
    this.syncing = new Promise<void>((settle) =>
      this.durability.sync((err) => {
        this.syncs++;
        // A failed sync leaves it unknown whether these writes are on disk: they are refused
        // (the client sees 500 and may retry; a retried message id is answered as a retry).
        for (const d of batch) if (err) d.job.reject(err);
        else d.job.resolve(d.value);
        this.syncing = null;
        settle();
        this.commitAndSync();
      }),
    );
  }

  /** Runs what is queued and waits until every write is committed and synced. */
  async drain(): Promise<void> {
    this.flush();
    while (this.syncing) await this.syncing;
  }
}
