/**
 * Writes that PostgreSQL serialises on one lock (an account's advisory lock of locks.ts, a room's
 * row) wait for each other here, in memory, before they take a pooled connection. Otherwise a
 * burst from one account (fifty room creations at once, an upload's parts in flight) holds every
 * connection of the pool while each waits for the lock, and every other request waits for a
 * connection past CONNECT_TIMEOUT_MS and fails with a 500. Instances sharing the database still
 * serialise on the lock itself; this only keeps one instance's waiting out of its pool.
 */
export class LockQueue {
  /** The last write queued for each key; deleted once it settles with nothing after it. */
  private readonly tails = new Map<string, Promise<unknown>>();

  /** Runs `write` once every write queued before it under `key` has settled. */
  run<T>(key: string, write: () => Promise<T>): Promise<T> {
    const result = (this.tails.get(key) ?? Promise.resolve()).then(write);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }
}
