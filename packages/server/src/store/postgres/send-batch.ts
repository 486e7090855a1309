/**
 * Sends of concurrent requests in one statement. Each send is still the function
 * `send_envelope` of migration 2, with every rule of docs/API.md §2.5 in it; a batch calls it
 * once per send inside one statement, so N sends cost one round trip and one commit (one WAL
 * flush) instead of N. Under load the database does the same work per send but none of the
 * per-statement and per-commit work, and the pool's connections are no longer held by sends
 * waiting for their turn on the CPU.
 *
 * One batch is in flight per instance at a time; the sends that arrive meanwhile form the next
 * one, so the batch grows with the load and a lone send goes out at once. A batch is one
 * transaction that takes the locks of its sends one send after another, so against another
 * writer (another instance's batch, a member change) it can end in a deadlock that a single send
 * could not: PostgreSQL then aborts one of the two, which has written nothing. Whatever the
 * failure, the sends of a failed batch run again one by one on the single-send path, where each
 * takes its locks in the order every writer uses (locks.ts) and retries a deadlock itself. A send
 * that did commit before a connection broke is found by its id and answered as a retry, exactly
 * as when a client sends it again.
 */
import type { SendInput, SendResult } from '../types.js';

/** Most sends in one statement: large enough to share the cost, small enough to keep a statement short. */
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
   * @param many sends a batch of two or more as one statement, answering in the batch's order.
   * @param one sends a single send on the single-send path (its own statement and retries).
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
