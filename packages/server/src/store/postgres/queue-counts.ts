/**
 * queue_len of the devices this instance queued for, raised in the background. A room message
 * queues for every device of every member, and raising each one's count in every send
 * transaction cost a locked row update per target device and made two instances' sends to one
 * room wait for each other's commit (docs/BENCHMARKS.md). Now the sends of a short
 * interval are counted together, one row update per device, in a transaction of their own whose
 * locks last one statement. The rows are those of `queue_lengths`, which no send locks (migration
 * 7): as a column of the device rows that sends hold, the counts of two instances had cost
 * PostgreSQL a MultiXact per row and waited for each other (docs/BENCHMARKS.md).
 *
 * queue_len is therefore a count that may lag, and only says when to look: queue_trim, which
 * drops the oldest entries past the cap, counts the queue itself, and it also runs when a device
 * opens its stream, before the replay reads it. So a replay never carries more than the cap, a
 * queue passes it by at most an interval's sends in between, and a count lost in a crash is set
 * right at the device's next stream open (migration 5).
 */
import type pg from 'pg';
import { LIMITS } from '@svc/protocol';
import { autocommit, scriptedTransaction } from './db.js';
import { intArray, intLiteral, textArray } from './literals.js';
import type { Added } from './messages.js';

/** How long counts gather before they are written: a few sends of each busy device at most. */
const COUNT_INTERVAL_MS = 100;

export class QueueCounts {
  private pending: Added = new Map();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly pool: pg.Pool,
    private readonly intervalMs: number = COUNT_INTERVAL_MS,
  ) {}

  /** What a committed send transaction added to each device queue. */
  add(added: Added): void {
    for (const [deviceId, n] of added) this.pending.set(deviceId, (this.pending.get(deviceId) ?? 0) + n);
    if (this.pending.size > 0 && this.timer === undefined) {
      this.timer = setTimeout(() => void this.flush(), this.intervalMs);
      // A process that exits meanwhile loses only a hint (see above).
      this.timer.unref();
    }
  }

  /** Writes every count added so far, after any write already running; for stats, tests and closing. */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.running) await this.running;
    if (this.pending.size === 0) return;
    const counts = this.pending;
    this.pending = new Map();
    this.running = countAdded(this.pool, counts).finally(() => {
      this.running = undefined;
    });
    await this.running;
  }
}

/**
 * Raises queue_len by what committed sends added, then trims the queues that passed the cap. The
 * transaction need not wait for its WAL flush, and a failure is nobody's to answer: the sends have
 * committed, and a count lost is set right as one lost in a crash is.
 */
async function countAdded(pool: pg.Pool, added: Added): Promise<void> {
  const text = `BEGIN; SET LOCAL synchronous_commit TO off; SELECT queue_counted(${textArray([...added.keys()])}, ${intArray([
    ...added.values(),
  ])}, ${intLiteral(LIMITS.queuePerDevice)}) AS id; COMMIT`;
  try {
    const [, , over] = await scriptedTransaction(pool, (q) => q.script(text));
    // queue_trim (migration 5) keeps the newest LIMITS.queuePerDevice entries and counts what is left.
    for (const { id } of over as { id: string }[]) await autocommit(pool, (q) => q.run('SELECT queue_trim($1, $2)', [id, LIMITS.queuePerDevice]));
  } catch {
    // See above.
  }
}
