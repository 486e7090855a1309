/**
 * Queue lengths of the embedded store, kept in memory instead of in a column. Keeping
 * devices.queue_len exact cost an UPDATE of a scattered devices row per target on every send:
 * measured here, about 24 us of CPU and 5 KB of WAL per DM (two targets), half the cost of
 * storing the message. This process is the only writer of the queue (read-cache.ts says why), so
 * a device's length is counted once from its rows (the queue_device index) when first needed
 * and then kept by every change to its queue. The total for stats is counted once the same way.
 * Whenever a write is rolled back the store forgets all of it (counts made inside the rolled-back
 * write may include rows that never committed) and counts again when next asked.
 */
import type { Statements } from './statements.js';

/** Past this many devices the per-device counts start again: a bound on memory. */
const MAX_DEVICES = 200_000;

export class QueueCounts {
  private readonly perDevice = new Map<string, number>();
  private total: number | null = null;

  constructor(private readonly q: Statements) {}

  /** Entries queued for the device. */
  of(deviceId: string): number {
    let n = this.perDevice.get(deviceId);
    if (n === undefined) {
      n = this.q.one<{ n: number }>('SELECT COUNT(*) AS n FROM queue WHERE device_id = ?', deviceId)!.n;
      if (this.perDevice.size >= MAX_DEVICES) this.perDevice.clear();
      this.perDevice.set(deviceId, n);
    }
    return n;
  }

  /** Entries queued in all. */
  all(): number {
    this.total ??= this.q.one<{ n: number }>('SELECT COUNT(*) AS n FROM queue')!.n;
    return this.total;
  }

  /** `delta` entries were added to (or, negative, removed from) the device's queue. */
  changed(deviceId: string, delta: number): void {
    if (delta === 0) return;
    const n = this.perDevice.get(deviceId);
    if (n !== undefined) this.perDevice.set(deviceId, n + delta);
    if (this.total !== null) this.total += delta;
  }

  /** The device and its `removed` entries are gone. */
  dropped(deviceId: string, removed: number): void {
    this.perDevice.delete(deviceId);
    if (this.total !== null) this.total -= removed;
  }

  clear(): void {
    this.perDevice.clear();
    this.total = null;
  }
}
