/**
 * The rowid of an envelope is its time: `ts × 1024 + n`, n counting the envelopes of that
 * millisecond (migration 5). Envelopes older than a cutoff are then a range of the table itself
 * (rowids below `keysBefore(cutoff)`, their ts checked as well), so the purge needs no index on ts
 * and no send writes one: every commit used to rewrite that index's last page in the WAL.
 *
 * A key may already be taken (the clock went back, or the process restarted within the same
 * millisecond): the insert then does nothing and the send tries the next key of the same
 * millisecond. Past the 1,024th envelope of one millisecond (a rate no instance comes near),
 * SQLite picks the key, above every row: that envelope is purged late, never early.
 */
export const SLOTS_PER_MS = 1024;

export class TimeKeys {
  private ms = -1;
  private next = 0;

  /** The first key to try for an envelope of time `ts`. */
  first(ts: number): number | null {
    const ms = Math.floor(ts);
    if (ms !== this.ms) {
      this.ms = ms;
      this.next = 0;
    }
    return this.take();
  }

  /** The key to try after `key`, of the millisecond `first` last gave, was found taken; null lets SQLite choose. */
  after(key: number): number | null {
    this.next = Math.max(this.next, key - this.ms * SLOTS_PER_MS + 1);
    return this.take();
  }

  private take(): number | null {
    if (this.next >= SLOTS_PER_MS) return null;
    return this.ms * SLOTS_PER_MS + this.next++;
  }
}

/**
 * A bound on the keys of envelopes older than `cutoff`: each of them has a smaller rowid (but for
 * those SQLite placed, purged late). The caller still checks ts, which makes the range exact.
 */
export function keysBefore(cutoff: number): number {
  return (Math.floor(cutoff) + 1) * SLOTS_PER_MS;
}
