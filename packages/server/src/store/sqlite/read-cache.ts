/**
 * Rows read on every request (the session of the cookie, the owner of the X-Device id, whether
 * a DM's recipient exists, whether two accounts are contacts, an account's devices as send
 * targets), kept in memory by the embedded
 * store. This is safe because this process is the store's only writer of those rows (the admin
 * command only ever removes sessions that are idle-expired, which the service refuses anyway):
 * every write that changes or removes such a row forgets it while it runs, and whenever a write
 * is rolled back the store forgets everything (group-commit.ts calls back), so a row read inside
 * a transaction that did not commit is never remembered past it.
 */

/** Past this many rows a cache starts again: a bound on memory, not an eviction policy. */
const MAX_ROWS = 100_000;

export class ReadCache<V> {
  private readonly rows = new Map<string, V>();

  get(key: string, load: () => V | null): V | null {
    const hit = this.rows.get(key);
    if (hit !== undefined) return hit;
    const v = load();
    // Absent rows are not remembered: any id would otherwise take memory.
    if (v !== null) {
      if (this.rows.size >= MAX_ROWS) this.rows.clear();
      this.rows.set(key, v);
    }
    return v;
  }

  forget(keys: string | Iterable<string>): void {
    if (typeof keys === 'string') this.rows.delete(keys);
    else for (const k of keys) this.rows.delete(k);
  }

  clear(): void {
    this.rows.clear();
  }
}
