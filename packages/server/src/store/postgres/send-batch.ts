/**
 * Sends of concurrent requests in one transaction. A batch is what `sendMessages` (messages.ts)
 * does for one send, done once for all of them: the locks and facts in one statement, the send
 * rules decided in TypeScript, the writes in one statement, one commit (one WAL flush). N sends
 * cost four round trips instead of 4 N, and each step works on sets, not on one send at a time.
 *
 * One batch is in flight per instance at a time; the sends that arrive meanwhile form the next
 * one, so the batch grows with the load and a lone send goes out at once. A batch takes each
 * kind of lock in key order (migration 4), so two batches never deadlock, but against another
 * writer that takes the same kinds in another order (an account deletion: the account, then its
 * rooms) it can end in a deadlock that a single send could not: PostgreSQL then aborts one of
 * the two, which has written nothing. Whatever the failure, the sends of a failed batch run again
 * one by one on the single-send path, which retries a deadlock itself. A send that did commit
 * before a connection broke is found by its id and answered as a retry, exactly as when a client
 * sends it again.
 */
import type { SendInput, SendResult } from '../types.js';

/** Most sends in one transaction: large enough to share the cost, small enough to keep its statements short. */
const MAX_BATCH = 200;

interface Waiting {
  send: SendInput;
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
    private readonly many: (sends: SendInput[]) => Promise<SendResult[]>,
    private readonly one: (send: SendInput) => Promise<SendResult>,
  ) {}

  send(send: SendInput): Promise<SendResult> {
    return new Promise<SendResult>((resolve, reject) => {
      this.waiting.push({ send, resolve, reject });
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
      this.inFlight = false;
      this.schedule();
    }
  }

  private async single(w: Waiting): Promise<void> {
    try {
      w.resolve(await this.one(w.send));
    } catch (e) {
      w.reject(e);
    }
  }

  private async together(batch: Waiting[]): Promise<void> {
    let results: SendResult[];
    try {
      results = await this.many(batch.map((w) => w.send));
      if (results.length !== batch.length) throw new Error(`a batch of ${batch.length} sends answered ${results.length}`);
    } catch {
      // The batch wrote nothing (one transaction), or committed before its connection broke;
      // either way each send on its own path gives the right answer (see above). One after the
      // other, in the order they arrived, as the batch would have run them: a rare path, and the
      // sends of one id keep their order (the first is stored, the next answered as its retry).
      for (const w of batch) await this.single(w);
      return;
    }
    batch.forEach((w, i) => w.resolve(results[i]!));
  }
}
