/**
 * The writes of one turn of the event loop, run in the group commit's open transaction
 * (group-commit.ts decides when it commits and syncs): together under one savepoint, or each in
 * a savepoint of its own, and what is undone when one of them fails.
 */
import type Database from 'better-sqlite3';
import type { Db } from './db.js';

export interface Job {
  fn: () => unknown;
  /** The job writes with one statement at most (GroupCommit.run's `oneStatement`). */
  one: boolean;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

/** What the turn's writes tell the group commit they belong to. */
export interface TurnHost {
  /** Right after BEGIN (GroupCommitHooks.afterBegin). */
  afterBegin: () => void;
  /** Whenever any write is rolled back (GroupCommitHooks.onRollback). */
  onRollback: () => void;
  /** A write's statements are done: it settles now or once synced. */
  settle: (job: Job, value: unknown) => void;
  /** The open transaction was given up: the writes done in it before are lost. */
  loseOpen: (err: unknown) => void;
}

/**
 * BEGIN failed (another process holds the write lock past the busy timeout, which blocks the
 * event loop while it waits): the rest of the turn's writes are refused with it rather than each
 * waiting as long again.
 */
function refuseBusy(jobs: Job[]): void {
  const err = new Error('the database is busy: another process holds its write lock');
  for (const j of jobs) j.reject(err);
}

export class TurnWrites {
  private readonly begin: Database.Statement;
  private readonly rollback: Database.Statement;
  private readonly savepoint: Database.Statement;
  private readonly release: Database.Statement;
  private readonly rollbackTo: Database.Statement;

  constructor(
    private readonly db: Db,
    private readonly host: TurnHost,
  ) {
    this.begin = db.prepare('BEGIN IMMEDIATE');
    this.rollback = db.prepare('ROLLBACK');
    this.savepoint = db.prepare('SAVEPOINT w');
    this.release = db.prepare('RELEASE w');
    this.rollbackTo = db.prepare('ROLLBACK TO w');
  }

  /** Runs the turn's writes in the open transaction (begun if none is open), each settled or rejected. */
  run(jobs: Job[]): void {
    if (jobs.length > 1 ? !this.runTogether(jobs) : jobs.length === 1) this.runEach(jobs);
  }

  /**
   * The turn's writes one after the other under one savepoint (none when the transaction begins
   * with them), each settled only once all have run. Under load a turn holds dozens of writes,
   * and a savepoint of each cost two statements and a copy of every page the write first touched
   * (docs/BENCHMARKS.md). Returns false when a write threw: everything the turn wrote is
   * undone, nothing is settled, and `runEach` runs them again, each alone, as it would have.
   * A write's function may run twice therefore: those of the store are statements and what they
   * forget or remember in memory, which a rollback makes it forget anyway (`onRollback`).
   */
  private runTogether(jobs: Job[]): boolean {
    const fresh = !this.db.inTransaction;
    if (fresh) {
      try {
        this.begin.run();
      } catch (err) {
        jobs[0]!.reject(err);
        refuseBusy(jobs.slice(1));
        return true;
      }
      try {
        this.host.afterBegin();
      } catch {
        // `runEach` begins again for its first write, and answers it as ever.
        this.rollbackQuietly();
        return false;
      }
    } else {
      try {
        this.savepoint.run();
      } catch {
        // `runEach` meets it again, and answers it as ever.
        return false;
      }
    }
    const values: unknown[] = [];
    try {
      for (const job of jobs) values.push(job.fn());
      if (!fresh) this.release.run();
    } catch (err) {
      this.host.onRollback();
      // If the transaction is lost, the earlier turns' writes are lost with it; this turn's run again.
      this.undo(fresh, err);
      return false;
    }
    for (let i = 0; i < jobs.length; i++) this.host.settle(jobs[i]!, values[i]);
    return true;
  }

  /** Each write in a savepoint of its own, the transaction begun first if none is open. */
  private runEach(jobs: Job[]): void {
    for (let i = 0; i < jobs.length; i++) {
      if (!this.runJob(jobs[i]!)) {
        refuseBusy(jobs.slice(i + 1));
        break;
      }
    }
  }

  /**
   * One write in its own savepoint of the open transaction (begun if none is open). Returns false
   * only when the transaction could not begin.
   */
  private runJob(job: Job): boolean {
    // The first write of a transaction needs no savepoint: if it fails, rolling back the whole
    // transaction undoes exactly it. Under light load nearly every write is first, and this
    // saves two statements each.
    const first = !this.db.inTransaction;
    if (first) {
      try {
        this.begin.run();
      } catch (err) {
        job.reject(err);
        return false;
      }
      try {
        this.host.afterBegin();
      } catch (err) {
        job.reject(err);
        this.rollbackQuietly();
        return true;
      }
    }
    // The first write of a transaction needs no savepoint either (see above).
    const saved = !first && !job.one;
    try {
      if (saved) this.savepoint.run();
      const value = job.fn();
      if (saved) this.release.run();
      this.host.settle(job, value);
      return true;
    } catch (err) {
      job.reject(err);
      this.host.onRollback();
      // Its one statement failed and SQLite undid it: the transaction goes on without it.
      if (!first && job.one && this.db.inTransaction) return true;
      this.undo(first, err);
      return true;
    }
  }

  /**
   * Undoes what failed: the whole transaction when it began with it (`fromBegin`: nothing else is
   * in it, and the next write begins anew), else back to the savepoint. If SQLite gave up the
   * whole transaction itself (disk full, I/O error), or the savepoint is beyond repair, the
   * writes done in the transaction before are lost with it; the next write begins a fresh one.
   */
  private undo(fromBegin: boolean, err: unknown): void {
    if (fromBegin) {
      this.rollbackQuietly();
      return;
    }
    if (this.db.inTransaction) {
      try {
        this.rollbackTo.run();
        this.release.run();
        return;
      } catch {
        this.rollbackQuietly();
      }
    }
    this.host.loseOpen(err);
  }

  /** ROLLBACK where it may fail too (an I/O error): what matters is that nothing is committed. */
  rollbackQuietly(): void {
    try {
      if (this.db.inTransaction) this.rollback.run();
    } catch {
      // SQLite rolls back a transaction it cannot finish when the connection next reads.
    }
  }
}
