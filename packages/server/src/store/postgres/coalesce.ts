/**
 * Read coalescing: the lookups that every request makes (its session, its device's owner) are
 * collected while the event loop handles one round of I/O and sent as one
 * statement for all of them, instead of one round trip each. Under load a round holds many
 * requests, so the database sees a few statements per round rather than a few per request;
 * when the service is idle a round holds one lookup, and nothing changes.
 *
 * Nothing is cached: each lookup is answered by a statement that starts after the lookup was
 * asked for, so it sees every change committed before the call, exactly as a query of its own
 * would. A revoked session or a deleted device is refused from the next request on, on every
 * instance, whatever Redis does.
 */

/** Most keys sent in one statement; a larger round is split. */
const MAX_BATCH = 500;

interface Waiting<K, V> {
  key: K;
  resolve: (v: V) => void;
  reject: (e: unknown) => void;
}

export class Coalescer<K, V> {
  private waiting: Waiting<K, V>[] = [];
  private scheduled = false;

  /**
   * @param run answers a batch of keys with one value per key, in the keys' order (the SQL
   *   behind it joins `unnest($1) WITH ORDINALITY` so that every key gets its row).
   */
  constructor(private readonly run: (keys: K[]) => Promise<V[]>) {}

  get(key: K): Promise<V> {
    return new Promise<V>((resolve, reject) => {
      this.waiting.push({ key, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        // setImmediate runs after the poll phase, so every request whose bytes arrived in this
        // round has asked by then.
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const all = this.waiting;
    this.waiting = [];
    for (let i = 0; i < all.length; i += MAX_BATCH) void this.answer(all.slice(i, i + MAX_BATCH));
  }

  private async answer(batch: Waiting<K, V>[]): Promise<void> {
    try {
      const values = await this.run(batch.map((w) => w.key));
      if (values.length !== batch.length) throw new Error(`coalesced lookup answered ${values.length} rows for ${batch.length} keys`);
      batch.forEach((w, i) => w.resolve(values[i]!));
    } catch (e) {
      for (const w of batch) w.reject(e);
    }
  }
}
