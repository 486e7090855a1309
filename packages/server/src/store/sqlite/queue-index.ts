/**
 * Each device's queue entries (their seqs, oldest first), kept in memory instead of in an index
 * of the file. An index on (device_id, seq) put every target's new entry on a page of its own,
 * so a DM dirtied two scattered pages and a room message of 100 targets a hundred, each written
 * to the WAL at every commit: measured here, half the CPU of a room fan-out (docs/BENCHMARKS.md).
 * The queue table itself is appended in seq order and reached by seq (its rowid), and by
 * (envelope_id, device_id) for acks.
 *
 * This process is the only writer of the queue (read-cache.ts says why), so the index is read
 * from the table once and then kept by every change the store makes. Whenever a write is rolled
 * back, or another process has committed, the store forgets it (what a rolled-back write added
 * never committed) and it is read again, whole, when next needed: one scan of the queue table,
 * on the event loop, about a second per million entries.
 */
import type { Statements } from './statements.js';

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
    for (const r of this.q.iterate<{ d: string; s: number }>('SELECT device_id AS d, seq AS s FROM queue ORDER BY seq')) {
      const list = this.perDevice.get(r.d);
      if (list) list.push(r.s);
      else this.perDevice.set(r.d, [r.s]);
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

  /** The device's seqs after `afterSeq`, oldest first, at most `limit`. */
  after(deviceId: string, afterSeq: number, limit: number): number[] {
    this.load();
    const list = this.perDevice.get(deviceId);
    if (!list) return [];
    // First index whose seq is above afterSeq (the list is ascending).
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (list[mid]! <= afterSeq) lo = mid + 1;
      else hi = mid;
    }
    return list.slice(lo, lo + limit);
  }

  /** The device's `n` oldest seqs. */
  oldest(deviceId: string, n: number): number[] {
    this.load();
    return (this.perDevice.get(deviceId) ?? []).slice(0, n);
  }

  /** An entry was appended to the device's queue (seqs only grow: the table is AUTOINCREMENT). */
  added(deviceId: string, seq: number): void {
    if (!this.loaded) return; // read whole, with this entry, when next needed
    const list = this.perDevice.get(deviceId);
    if (list) list.push(seq);
    else this.perDevice.set(deviceId, [seq]);
    this.total++;
  }

  /** These entries of the device were deleted. */
  removed(deviceId: string, seqs: readonly number[]): void {
    if (!this.loaded || seqs.length === 0) return;
    const list = this.perDevice.get(deviceId);
    if (!list) return;
    const gone = new Set(seqs);
    const kept = list.filter((s) => !gone.has(s));
    this.total -= list.length - kept.length;
    if (kept.length === 0) this.perDevice.delete(deviceId);
    else this.perDevice.set(deviceId, kept);
  }

  /** Forgets everything; read again when next needed. */
  clear(): void {
    this.loaded = false;
    this.perDevice.clear();
    this.total = 0;
  }
}
