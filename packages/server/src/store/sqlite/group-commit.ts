/**
 * Group commit for the embedded store. With synchronous=FULL every COMMIT waits for an fsync,
 * and better-sqlite3 waits for it on the event loop: one commit per request caps the service at
 * one request per fsync, however many are waiting. Instead, every write asked for during one turn
 * of the event loop is queued and run at the end of that turn (setImmediate) in ONE transaction,
 * each inside its own savepoint, and then committed with one fsync. A write whose own statements
 * fail is rolled back to its savepoint and rejected alone; the others still commit. No promise
 * resolves before its COMMIT has returned and the WAL holding it has been synced to disk (see
 * wal-sync.ts: that sync runs off the event loop, and covers every batch committed before it
 * started), so an answered request survives a power loss.
 *
 * Reads are not queued: they run at once and see only committed data, because the transaction
 * is only ever open inside `flush`, which runs to its end synchronously. A read may see a
 * write that is committed but whose sync has not finished: a power loss in that window loses a
 * write that was never answered, and its client sends it again.
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
  /** Committed, waiting for the next sync; and the sync under way, if any. */
  private unsynced: Done[] = [];
  private syncing: Promise<void> | null = null;
  private readonly begin: Database.Statement;
  private readonly commit: Database.Statement;
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
    this.commit = db.prepare('COMMIT');
    this.rollback = db.prepare('ROLLBACK');
    this.savepoint = db.prepare('SAVEPOINT w');
    this.release = db.prepare('RELEASE w');
    this.rollbackTo = db.prepare('ROLLBACK TO w');
  }

  /** Runs `fn` (synchronous statements only) in the next group transaction; resolves after its commit. */
  run<T>(fn: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (v: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Runs every queued write now (also called before the store closes). */
  flush(): void {
    this.scheduled = false;
    let jobs = this.queue;
    this.queue = [];
    // A statement error of the kind SQLite answers by rolling back the whole transaction (disk
    // full, I/O error) loses the writes before it in the batch too: those are rejected with it,
    // and the rest of the batch goes on in a fresh transaction.
    while (jobs.length > 0) jobs = this.runBatch(jobs);
  }

  /** One transaction over `jobs`; returns the jobs not yet attempted when the transaction was lost. */
  private runBatch(jobs: Job[]): Job[] {
    try {
      this.begin.run();
    } catch (err) {
      for (const j of jobs) j.reject(err);
      return [];
    }
    const done: Done[] = [];
    for (let i = 0; i < jobs.length; i++) {
      const job = jobs[i]!;
      try {
        this.savepoint.run();
        const value = job.fn();
        this.release.run();
        done.push({ job, value });
      } catch (err) {
        job.reject(err);
        this.onRollback();
        if (this.db.inTransaction) {
          try {
            this.rollbackTo.run();
            this.release.run();
            continue;
          } catch {
            // The savepoint is beyond repair: give up the whole transaction below.
            this.rollback.run();
          }
        }
        for (const d of done) d.job.reject(err);
        return jobs.slice(i + 1);
      }
    }
    try {
      this.commit.run();
    } catch (err) {
      if (this.db.inTransaction) this.rollback.run();
      this.onRollback();
      for (const d of done) d.job.reject(err);
      return [];
    }
    this.commits++;
    this.writes += done.length;
    this.unsynced.push(...done);
    this.startSync();
    return [];
  }

  /** One sync at a time; what commits meanwhile waits for the next one, so syncs batch too. */
  private startSync(): void {
    if (this.syncing || this.unsynced.length === 0) return;
    const batch = this.unsynced;
    this.unsynced = [];
    this.syncing = new Promise<void>((settle) =>
      this.durability.sync((err) => {
        this.syncs++;
        // A failed sync leaves it unknown whether these writes are on disk: they are refused
        // (the client sees 500 and may retry; a retried message id is answered as a retry).
        for (const d of batch) if (err) d.job.reject(err);
        else d.job.resolve(d.value);
        this.syncing = null;
        settle();
        this.startSync();
      }),
    );
  }

  /** Commits what is queued and waits until every committed write is synced. */
  async drain(): Promise<void> {
    this.flush();
    while (this.syncing) await this.syncing;
  }
}
