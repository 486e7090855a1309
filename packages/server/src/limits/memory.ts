/**
 * In-process sliding-log limiter: for each key the times of the hits inside the window. Exact
 * (never more than `limit` in any window, unlike fixed windows that allow twice at a boundary);
 * memory is bounded by the limit per key, and idle keys are swept.
 */
import type { RateLimiter } from './types.js';

export class MemoryLimiter implements RateLimiter {
  private readonly hits = new Map<string, { windowMs: number; times: number[] }>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly now: () => number = Date.now) {
    this.sweeper = setInterval(() => this.sweep(), 60_000);
    this.sweeper.unref();
  }

  async hit(key: string, limit: number, windowMs: number): Promise<number> {
    const now = this.now();
    let entry = this.hits.get(key);
    if (!entry) {
      entry = { windowMs, times: [] };
      this.hits.set(key, entry);
    }
    const times = entry.times;
    while (times.length > 0 && times[0]! <= now - windowMs) times.shift();
    if (times.length >= limit) {
      const waitMs = times[times.length - limit]! + windowMs - now;
      return Math.max(1, Math.ceil(waitMs / 1000));
    }
    times.push(now);
    return 0;
  }

  private sweep(): void {
    const now = this.now();
    for (const [key, e] of this.hits) {
      const last = e.times[e.times.length - 1];
      if (last === undefined || last <= now - e.windowMs) this.hits.delete(key);
    }
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
  }
}
