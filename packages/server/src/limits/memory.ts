/**
 * In-process sliding-log limiter: for each key the times of the hits inside the window. Exact
 * (never more than `limit` in any window, unlike fixed windows that allow twice at a boundary).
 *
 * Memory is bounded whatever the keys: each key holds at most `limit` times, idle keys are swept,
 * and the number of keys is capped. When a flood of new keys (login attempts with random nicks
 * from many addresses) reaches the cap, idle keys go first, then the least recently used ones
 * down to 90% of the cap, so the cost of making room is spread over many new keys. A key under
 * attack stays, because every attempt on it, refused or not, makes it the most recently used.
 */
import type { Bucket, RateLimiter } from './types.js';

/** At most this many keys; with at most 100 times each (the largest default limit) a few tens of MB. */
export const MEMORY_LIMITER_MAX_KEYS = 50_000;

interface Entry {
  windowMs: number;
  times: number[];
  /** When the key was last tried, as a running count of attempts (refused ones included). */
  used: number;
}

/** Making room frees this share of the cap at once. */
const FREE_SHARE = 0.1;

export class MemoryLimiter implements RateLimiter {
  private readonly hits = new Map<string, Entry>();
  private uses = 0;
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly now: () => number = Date.now,
    private readonly maxKeys = MEMORY_LIMITER_MAX_KEYS,
  ) {
    this.sweeper = setInterval(() => this.sweep(), 60_000);
    this.sweeper.unref();
  }

  /** How many keys are held (tests check the bound). */
  get size(): number {
    return this.hits.size;
  }

  hit(key: string, limit: number, windowMs: number): Promise<number> {
    return this.hitAll([{ key, limit, windowMs }]);
  }

  async hitAll(buckets: readonly Bucket[]): Promise<number> {
    const now = this.now();
    const use = ++this.uses;
    let waitMs = 0;
    for (const b of buckets) {
      const e = this.hits.get(b.key);
      if (!e) continue;
      e.used = use;
      const times = e.times;
      while (times.length > 0 && times[0]! <= now - b.windowMs) times.shift();
      if (times.length >= b.limit) waitMs = Math.max(waitMs, times[times.length - b.limit]! + b.windowMs - now);
    }
    if (waitMs > 0) return Math.max(1, Math.ceil(waitMs / 1000));
    for (const b of buckets) {
      let e = this.hits.get(b.key);
      if (!e) {
        if (this.hits.size >= this.maxKeys) this.makeRoom(now);
        e = { windowMs: b.windowMs, times: [], used: use };
        this.hits.set(b.key, e);
      }
      e.times.push(now);
    }
    return 0;
  }

  /** Idle keys first; if that is not enough, the least recently used, down to 90% of the cap. */
  private makeRoom(now: number): void {
    const target = Math.floor(this.maxKeys * (1 - FREE_SHARE));
    this.sweep(now);
    if (this.hits.size <= target) return;
    const byUse = [...this.hits].sort((x, y) => x[1].used - y[1].used);
    for (let i = 0; this.hits.size > target; i++) this.hits.delete(byUse[i]![0]);
  }

  private sweep(now = this.now()): void {
    for (const [key, e] of this.hits) {
      const last = e.times[e.times.length - 1];
      if (last === undefined || last <= now - e.windowMs) this.hits.delete(key);
    }
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
  }
}
