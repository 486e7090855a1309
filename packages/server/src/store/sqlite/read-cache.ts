/**
 * Rows read on every request (the session of the cookie, the owner of the X-Device id), kept in
 * memory by the embedded store. This is safe because this process is the store's only writer of
 * those rows (the admin command only ever removes sessions that are idle-expired, which the
 * service refuses anyway): every write that changes or removes such a row forgets it while it
 * runs, and rows are remembered only from reads outside a transaction, i.e. committed state, so
 * a write that rolls back never leaves a row behind that was never committed.
 */
import type { Db } from './db.js';

/** Past this many rows the cache starts again: a bound on memory, not an eviction policy. */
const MAX_ROWS = 100_000;

export class ReadCache<V> {
  private readonly rows = new Map<string, V>();
  constructor(private readonly db: Db) {}

  get(key: string, load: () => V | null): V | null {
    const hit = this.rows.get(key);
    if (hit !== undefined) return hit;
    const v = load();
    // Absent rows are not remembered: any id would otherwise take memory.
    if (v !== null && !this.db.inTransaction) {
      if (this.rows.size >= MAX_ROWS) this.rows.clear();
      this.rows.set(key, v);
    }
    return v;
  }

  forget(keys: string | Iterable<string>): void {
    if (typeof keys === 'string') this.rows.delete(keys);
    else for (const k of keys) this.rows.delete(k);
  }
}
