/**
 * Each device's queue entries (their envelopes' keys, oldest first), kept in memory instead of in
 * an index of the file. An index on (device_id, seq) put every target's new entry on a page of
 * its own, so a DM dirtied two scattered pages and a room message of 100 targets a hundred, each
 * written to the WAL at every commit: measured here, half the CPU of a room fan-out
 * (docs/BENCHMARKS.md). The queue table is keyed by (envelope key, device) (migration 6), so new
 * entries are appended in time order, and an entry is reached by its key and its device.
 *
 * An envelope's key is its time (time-keys.ts), so a device's entries come in key order but for
 * an envelope accepted after the clock went back; that one is placed by its key. The key is the
 * replay's cursor (QueuedEntry.seq): an entry placed before a running replay's cursor reached the
 * stream live anyway (domain/streams.ts holds live events during a replay).
 *
 * This process is the only writer of the queue (read-cache.ts says why), so the index is read
 * from the table once and then kept by every change the store makes. Whenever a write is rolled
 * back, or another process has committed, the store forgets it (what a rolled-back write added
 * never committed) and it is read again, whole, when next needed: one scan of the queue table,
 * on the event loop, about a second per million entries.
 */
import type { Statements } from './statements.js';

/** Up to this many keys are removed from a device's list one by one; more, by one pass over it. */
const REMOVE_ONE_BY_ONE = 8;

export class QueueIndex {
  private readonly perDevice = new Map<string, number[]>();
  private total = 0;
  private loaded = false;

  constructor(private readonly q: Statements) {}

  /** Reads the whole index from the table, unless it is already known. */
  load(): void {
    if (this.loaded) return;
    this.perDevice.clear();
    this.total = 0;
    // In the table's own order (no sort): by key, so each device's list comes out ascending.
    for (const r of this.q.iterate<{ d: string; k: number }>('SELECT device_id AS d, envelope_key AS k FROM queue ORDER BY envelope_key')) {
      const list = this.perDevice.get(r.d);
      if (list) list.push(r.k);
      else this.perDevice.set(r.d, [r.k]);
      this.total++;
    }
    this.loaded = true;
  }

  /** Entries queued for the device. */
  of(deviceId: string): number {
    this.load();
    return this.perDevice.get(deviceId)?.length ?? 0;
  }

  /** Entries queued in all. */
  all(): number {
    this.load();
    return this.total;
  }

  /** The device's keys after `afterKey`, oldest first, at most `limit`. */
  after(deviceId: string, afterKey: number, limit: number): number[] {
    this.load();
    const list = this.perDevice.get(deviceId);
    if (!list) return [];
    const from = firstAbove(list, afterKey);
    return list.slice(from, from + limit);
  }

  /** The device's `n` oldest keys. */
  oldest(deviceId: string, n: number): number[] {
    this.load();
    return (this.perDevice.get(deviceId) ?? []).slice(0, n);
  }

  /** An entry was queued for the device. */
  added(deviceId: string, key: number): void {
    if (!this.loaded) return; // read whole, with this entry, when next needed
    const list = this.perDevice.get(deviceId);
    // A list in the map is never empty (`removed` deletes an emptied one).
    if (!list) this.perDevice.set(deviceId, [key]);
    else if (list[list.length - 1]! < key) list.push(key);
    else list.splice(firstAbove(list, key), 0, key);
    this.total++;
  }

  /** These entries of the device were deleted. */
  removed(deviceId: string, keys: readonly number[]): void {
    if (!this.loaded || keys.length === 0) return;
    const list = this.perDevice.get(deviceId);
    if (!list) return;
    const before = list.length;
    let kept = list;
    if (keys.length <= REMOVE_ONE_BY_ONE) {
      // A full queue drops its oldest entry at each send: no pass over all 10,000 for it.
      for (const k of keys) {
        const at = firstAbove(list, k - 1);
        if (at < list.length && list[at] === k) list.splice(at, 1);
      }
    } else {
      const gone = new Set(keys);
      kept = list.filter((k) => !gone.has(k));
    }
    this.total -= before - kept.length;
    if (kept.length === 0) this.perDevice.delete(deviceId);
    else if (kept !== list) this.perDevice.set(deviceId, kept);
  }

  /** Forgets everything; read again when next needed. */
  clear(): void {
    this.loaded = false;
    this.perDevice.clear();
    this.total = 0;
  }
}

/** The first index of the ascending `list` whose key is above `key`. */
function firstAbove(list: readonly number[], key: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid]! <= key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
