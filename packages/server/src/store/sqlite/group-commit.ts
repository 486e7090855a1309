/**
 * Group commit for the embedded store. With synchronous=FULL every COMMIT waits for an fsync,
 * and better-sqlite3 waits for it on the event loop: one commit per request caps the service at
 * one request per fsync, however many are waiting. Instead:
 *
 * - Every write asked for during one turn of the event loop is queued and run at the end of that
 *   turn (setImmediate), in one open transaction, the turn's writes under one savepoint (none
 *   when the transaction begins with them). A write whose own statements fail is rejected alone:
 *   the turn is undone and its writes run again, each in a savepoint of its own (the first of a
 *   transaction needs none, nor does a write of one statement: see `run`), and the others go on.
 * - The transaction is committed when no sync is under way; otherwise it stays open, and the
 *   writes of the following turns join it, until the sync ends. So there is one COMMIT and one
 *   fsync per sync cycle, however many writes arrive meanwhile: under load, batches grow by
 *   themselves instead of each turn paying a commit of its own. Nothing is delayed by this: a
 *   write committed during a sync could not be answered before the next sync anyway.
 * - By default no promise resolves before its COMMIT has returned and the WAL holding it has
 *   been synced to disk (wal-sync.ts: the sync runs off the event loop).
 * - With `settleBeforeSync` (the service's choice), a write's promise settles as soon as its own
 *   statements are done in the open transaction, and `durable()` is the barrier: it resolves once
 *   every write settled so far is committed and synced, and rejects if they were lost. The
 *   service publishes a write's events when it settles (so events go out in commit order, without
 *   waiting for the disk) and answers the request only after the barrier (routes/index.ts), so an
 *   answered request still survives a power loss. Why: on a shared disk the fsync's tail (tens of
 *   ms) and the wait for the sync before it would otherwise sit in every delivery.
 * - `committed()` is a weaker barrier for writes that may be answered once they survive the
 *   process ending, before they survive a power loss (an attachment's parts: docs/DESIGN.md,
 *   "Attachments"). It commits the open transaction at the end of the turn even while a sync is
 *   under way, without waiting for that sync; the next sync makes it durable, as ever.
 *
 * How a turn's writes run in the open transaction, and what is undone when one fails, is
 * turn-writes.ts.
 *
 * Reads are not queued: they run at once on the same connection, so they may see writes that
 * are not yet committed or not yet synced. Their own clients have no answer yet; if the commit
 * or the sync fails (or the power does), those writes are refused or lost, and their clients
 * send them again (a retried message id is answered as a retry).
 */
import type Database from 'better-sqlite3';
import type { Db } from './db.js';
import { TurnWrites, type Job } from './turn-writes.js';
import type { Durability } from './wal-sync.js';

interface Done {
  job: Job;
  value: unknown;
}

/** The writes of one transaction, as seen by `durable()`: settles when they are synced, or lost. */
interface Generation {
  promise: Promise<void>;
  resolve: () => void;
  reject: (e: unknown) => void;
}

function generation(): Generation {
  let resolve!: () => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // Nobody may be waiting on it: a loss is reported to those who are, never as unhandled.
  promise.catch(() => {});
  return { promise, resolve, reject };
}

/** A job settled early (`settleBeforeSync`): what is left to tell it is nothing. */
const SETTLED: Job = { fn: () => undefined, one: true, resolve: () => {}, reject: () => {} };

const RESOLVED = Promise.resolve();

export interface GroupCommitHooks {
  /** Called whenever any write is rolled back, so that what was read inside it can be forgotten. */
  onRollback?: () => void;
  /**
   * Called at the start of each transaction, right after BEGIN: the store checks for other
   * processes' commits. Inside the transaction (which holds the write lock, so no other commit
   * can come until it ends) the check reads the snapshot already taken: 0.2 µs, against 7 µs
   * for a read transaction of its own before BEGIN.
   */
  afterBegin?: () => void;
  /** Called once when a sync fails: the store can no longer promise durability. */
  onFatal?: (err: unknown) => void;
  /** Settle each write when its statements are done, not when it is synced; see `durable()`. */
  settleBeforeSync?: boolean;
}

export class GroupCommit {
  private queue: Job[] = [];
  private scheduled = false;
  /** Writes done in the open transaction, not yet committed. */
  private open: Done[] = [];
  /** The sync under way, if any; it settles when its writes have been answered. */
  private syncing: Promise<void> | null = null;
  /** Writes committed while a sync was under way (`committed()`), waiting for the next sync. */
  private unsynced: Done[] = [];
  /** For `durable()`: the writes settled in the open transaction, those committed and waiting for a sync, and those being synced. */
  private openGen: Generation | null = null;
  private unsyncedGens: Generation[] = [];
  private syncGens: Generation[] = [];
  /** For `committed()`: settles when the open transaction commits, or is lost. */
  private commitWaiters: Generation | null = null;
  private readonly early: boolean;
  private readonly onRollback: () => void;
  private readonly onFatal: (err: unknown) => void;
  /** Runs each turn's writes in the open transaction (turn-writes.ts). */
  private readonly turn: TurnWrites;
  private readonly commitStmt: Database.Statement;
  /**
   * Set for good once a sync has failed: after a failed fsync the kernel may have dropped the
   * dirty pages and does not report it again, so no later sync can be trusted (PostgreSQL stops
   * for the same reason). Every write from then on is refused, and `onFatal` is told.
   */
  private failed: Error | null = null;
  /** Set by close(): writes asked for after it are refused. */
  private closing = false;
  /** Generations of settled writes lost (see `durable`). */
  private losses = 0;
  /** Commits, syncs and writes since the store opened, for tests and the benchmark's notes. */
  commits = 0;
  syncs = 0;
  writes = 0;

  constructor(
    private readonly db: Db,
    private readonly durability: Durability,
    hooks: GroupCommitHooks = {},
  ) {
    this.onRollback = hooks.onRollback ?? (() => {});
    this.onFatal = hooks.onFatal ?? (() => {});
    this.early = hooks.settleBeforeSync === true;
    this.turn = new TurnWrites(db, {
      afterBegin: hooks.afterBegin ?? (() => {}),
      onRollback: this.onRollback,
      settle: (job, value) => this.settle(job, value),
      loseOpen: (err) => this.loseOpen(err),
    });
    this.commitStmt = db.prepare('COMMIT');
  }

  /**
   * Runs `fn` (synchronous statements only) in a group transaction; resolves once it is committed
   * and synced, or with `settleBeforeSync` once its statements are done (then see `durable()`).
   *
   * `oneStatement`: `fn` writes with one statement at most, and throws at once if it fails. It then
   * needs no savepoint of its own: SQLite undoes a failed statement alone and leaves the
   * transaction open (or gives up the whole transaction, which is handled as for any write). A
   * savepoint copies every page its write first touches into a journal in memory: measured, 3–4 µs
   * of the acks of a DM, about 40 % of their cost (docs/BENCHMARKS.md).
   */
  run<T>(fn: () => T, oneStatement = false): Promise<T> {
    if (this.failed !== null) return Promise.reject(this.failed);
    if (this.closing) return Promise.reject(new Error('the store is closing'));
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, one: oneStatement, resolve: resolve as (v: unknown) => void, reject });
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
    this.turn.run(jobs);
    if (!this.syncing) this.commitAndSync();
    else if (this.commitWaiters) this.commitOpen();
  }

  /** A write's statements are done: it settles now (`settleBeforeSync`) or once synced. */
  private settle(job: Job, value: unknown): void {
    if (this.early) {
      this.openGen ??= generation();
      job.resolve(value);
      this.open.push({ job: SETTLED, value });
    } else {
      this.open.push({ job, value });
    }
  }

  private loseOpen(err: unknown): void {
    for (const d of this.open) d.job.reject(err);
    this.open = [];
    if (this.openGen) this.lose(this.openGen, err);
    this.openGen = null;
    this.commitWaiters?.reject(err);
    this.commitWaiters = null;
  }

  /** Settled writes were lost: those waiting on them are told, and so is every later `durable(mark)` of an older mark. */
  private lose(gen: Generation, err: unknown): void {
    this.losses++;
    gen.reject(err);
  }

  /** How many times settled writes have been lost so far; taken by a request before it writes. */
  lossMark(): number {
    return this.losses;
  }

  /**
   * Resolves once every write settled so far is committed and synced. Rejects if any write
   * settled since `mark` (from `lossMark()`) may have been lost: its transaction was given up or
   * a sync failed, even before this call. Without `settleBeforeSync` a settled write is already
   * synced, so this resolves at once.
   */
  durable(mark: number): Promise<void> {
    if (this.failed !== null) return Promise.reject(this.failed);
    if (this.losses !== mark) return Promise.reject(new Error('a write settled during this request was lost before it was synced'));
    // The open transaction is committed and synced only after the sync under way, and a failure
    // of that sync rejects it too, so waiting for the newest generation covers both.
    return this.openGen?.promise ?? this.unsyncedGens.at(-1)?.promise ?? this.syncGens.at(-1)?.promise ?? RESOLVED;
  }

  /**
   * Resolves once every write settled so far is committed: it survives the process ending, but
   * not yet a power loss (that is `durable()`). Rejects as `durable(mark)` does when a write
   * settled since `mark` was lost. The open transaction is committed at the end of this turn of
   * the event loop, without waiting for a sync under way; the writes asked for in this turn join it.
   */
  committed(mark: number): Promise<void> {
    if (this.failed !== null) return Promise.reject(this.failed);
    if (this.losses !== mark) return Promise.reject(new Error('a write settled during this request was lost before it was committed'));
    if (!this.openGen && this.open.length === 0) return RESOLVED;
    this.commitWaiters ??= generation();
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
    return this.commitWaiters.promise;
  }

  /** Commits the open transaction, its writes then waiting for the next sync; false when the COMMIT failed (they are lost). */
  private commitOpen(): boolean {
    if (!this.db.inTransaction) {
      this.commitWaiters?.resolve();
      this.commitWaiters = null;
      return true;
    }
    try {
      this.commitStmt.run();
    } catch (err) {
      this.turn.rollbackQuietly();
      this.onRollback();
      this.loseOpen(err);
      return false;
    }
    if (this.open.length > 0) {
      this.commits++;
      this.writes += this.open.length;
      for (const d of this.open) this.unsynced.push(d);
    }
    if (this.openGen) this.unsyncedGens.push(this.openGen);
    this.open = [];
    this.openGen = null;
    this.commitWaiters?.resolve();
    this.commitWaiters = null;
    return true;
  }

  /** Commits the open transaction and syncs what is committed; when the sync ends, does the same for what joined meanwhile. */
  private commitAndSync(): void {
    if (!this.commitOpen()) return;
    const batch = this.unsynced;
    const gens = this.unsyncedGens;
    this.unsynced = [];
    this.unsyncedGens = [];
    if (batch.length === 0) return;
    this.syncGens = gens;
    this.syncing = new Promise<void>((settle) =>
      this.durability.sync((err) => {
        this.syncs++;
        this.syncing = null;
        this.syncGens = [];
        if (err) {
          for (const gen of gens) this.lose(gen, err);
          this.fail(err, batch);
        } else {
          for (const d of batch) d.job.resolve(d.value);
          for (const gen of gens) gen.resolve();
          this.commitAndSync();
        }
        settle();
      }),
    );
  }

  /**
   * A failed sync: whether these writes, or any before them, are on disk is unknown. They and
   * everything still open or queued are refused, and so is every later write.
   */
  private fail(err: unknown, batch: Done[]): void {
    if (this.failed === null) this.failed = err instanceof Error ? err : new Error(String(err));
    for (const d of batch) d.job.reject(err);
    // Committed during the failed sync: whether the disk has them is as unknown.
    for (const d of this.unsynced.splice(0)) d.job.reject(err);
    for (const gen of this.unsyncedGens.splice(0)) this.lose(gen, err);
    this.turn.rollbackQuietly();
    this.onRollback();
    this.loseOpen(err);
    for (const j of this.queue.splice(0)) j.reject(err);
    this.onFatal(err);
  }

  /** Runs what is queued and waits until every write is committed and synced. */
  async drain(): Promise<void> {
    this.flush();
    while (this.syncing) await this.syncing;
  }

  /** Refuses writes from now on, and waits for those already asked for. */
  async close(): Promise<void> {
    this.closing = true;
    await this.drain();
  }
}
