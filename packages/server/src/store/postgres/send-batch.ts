/**
 * Sends of concurrent requests in one transaction. A batch is what `sendMessages` (messages.ts)
 * does for one send, done once for all of them: the locks and facts in one statement, the send
 * rules decided in TypeScript, the writes in one statement, one commit (one WAL flush). N sends
 * cost four round trips instead of 4 N, and each step works on sets, not on one send at a time.
 *
 * One batch is in flight per instance at a time; the sends that arrive meanwhile form the next
 * one, so the batch grows with the load and a lone send goes out at once. After a small batch
 * (a moderate load) the next one waits `HOLD_MS` for company: its round trips, statements and
 * commit are then shared by more sends (see HOLD_MS). The caller's checks
 * (the rights and the rate limit) run inside the batch, on the facts it read, before anything is
 * written (Store.sendMessage's `admit`). A batch takes each
 * kind of lock in key order (migration 4), so two batches never deadlock, but against another
 * writer that takes the same kinds in another order (an account deletion: the account, then its
 * rooms) it can end in a deadlock that a single send could not: PostgreSQL then aborts one of
 * the two, which has written nothing. Whatever else the failure, the sends of a failed batch run
 * again one by one on the single-send path, which retries a deadlock itself; only a database that
 * did not answer in time fails them all at once (it would make each wait again). A send that did commit
 * before a connection broke is found by its id and answered as a retry, exactly as when a client
 * sends it again.
 */
import type { Admit, SendInput, SendResult } from '../types.js';
import type { PendingSend, SendOutcome } from './messages.js';
import { timedOut } from './db.js';

/** Most sends in one transaction: large enough to share the cost, small enough to keep its statements short. */
const MAX_BATCH = 200;

/**
 * After a batch of fewer than SMALL_BATCH sends, the next starts HOLD_MS after it ended rather
 * than at once. At moderate rates a batch otherwise holds one or two sends, and each pays for its
 * round trips, its statements and its commit nearly alone: at 2,000 DMs/s one instance spent a
 * third less CPU per delivery with the hold, PostgreSQL nearly half less, for 1.5 ms more of
 * median latency (docs/BENCHMARKS.md). Under heavy load batches are larger and start at
 * once, so the maximum is not held back; a send that comes when nothing ran for HOLD_MS goes out
 * at once as before.
 */
export const SMALL_BATCH = 16;
export const HOLD_MS = 2;

interface Waiting extends PendingSend {
  resolve: (r: SendResult) => void;
  reject: (e: unknown) => void;
}

export class SendBatcher {
  private waiting: Waiting[] = [];
  private inFlight = false;
  private scheduled = false;

  /**
   * @param many sends a batch of two or more as one transaction, answering in the batch's order.
   * @param one sends a single send on the single-send path (its own transaction and retries).
   */
  constructor(
    private readonly many: (sends: PendingSend[]) => Promise<SendOutcome[]>,
    private readonly one: (send: PendingSend) => Promise<SendOutcome>,
  ) {}

  send(send: SendInput, admit?: Admit): Promise<SendResult> {
    // The caller's checks run once, whatever the attempts: a rate limit must not count a send
    // twice because its batch failed and it ran again alone. A later attempt reuses the verdict;
    // the rules, applied again by each attempt, still refuse a send whose rights have gone since.
    let admission: Promise<void> | undefined;
    const once: Admit = (facts, caller) => (admission ??= admit ? admit(facts, caller) : Promise.resolve());
    return new Promise<SendResult>((resolve, reject) => {
      this.waiting.push({ send, admit: once, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.inFlight || this.scheduled || this.waiting.length === 0) return;
    this.scheduled = true;
    // After the poll phase, so that every request whose bytes arrived in this round is in.
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    if (this.inFlight || this.waiting.length === 0) return;
    this.inFlight = true;
    const batch = this.waiting.splice(0, MAX_BATCH);
    try {
      if (batch.length === 1) await this.single(batch[0]!);
      else await this.together(batch);
    } finally {
      if (batch.length < SMALL_BATCH) setTimeout(() => this.next(), HOLD_MS);
      else this.next();
    }
  }

  private next(): void {
    this.inFlight = false;
    this.schedule();
  }

  private async single(w: Waiting): Promise<void> {
    try {
      settle(w, await this.one(w));
    } catch (e) {
      w.reject(e);
    }
  }

  private async together(batch: Waiting[]): Promise<void> {
    let outcomes: SendOutcome[];
    try {
      outcomes = await this.many(batch);
      if (outcomes.length !== batch.length) throw new Error(`a batch of ${batch.length} sends answered ${outcomes.length}`);
    } catch (e) {
      // A database that did not answer in time would not answer the sends one by one either:
      // each would wait out the same bound again, and its request far past it (docs/SECURITY.md).
      // They fail as the batch did; one that did commit is answered as
      // a retry when its client sends it again.
      if (timedOut(e)) {
        for (const w of batch) w.reject(e);
        return;
      }
      // The batch wrote nothing (one transaction), or committed before its connection broke;
      // either way each send on its own path gives the right answer (see above). One after the
      // other, in the order they arrived, as the batch would have run them: a rare path, and the
      // sends of one id keep their order (the first is stored, the next answered as its retry).
      for (const w of batch) await this.single(w);
      return;
    }
    batch.forEach((w, i) => settle(w, outcomes[i]!));
  }
}

function settle(w: Waiting, o: SendOutcome): void {
  if ('refused' in o) w.reject(o.refused);
  else w.resolve(o.result);
}
