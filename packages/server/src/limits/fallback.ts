/**
 * The shared limiter with a local fallback (docs/SECURITY.md). While
 * Redis cannot answer, each hit is counted by this instance's in-process limiter instead, so the
 * limits still hold (per instance rather than across instances) and neither fail open nor turn
 * every request into a 500. Counts made during the outage stay local; Redis takes over again on
 * the next hit that it answers.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Bucket, RateLimiter } from './types.js';

/** An outage is logged at most this often, not once per request. */
const WARN_EVERY_MS = 10_000;

export class FallbackLimiter implements RateLimiter {
  private lastWarn = 0;

  constructor(
    private readonly shared: RateLimiter,
    private readonly local: RateLimiter,
    private readonly log: FastifyBaseLogger,
  ) {}

  hit(key: string, limit: number, windowMs: number): Promise<number> {
    return this.hitAll([{ key, limit, windowMs }]);
  }

  async hitAll(buckets: readonly Bucket[]): Promise<number> {
    try {
      return await this.shared.hitAll(buckets);
    } catch (err) {
      const now = Date.now();
      if (now - this.lastWarn >= WARN_EVERY_MS) {
        this.lastWarn = now;
        this.log.warn({ err: { message: (err as Error).message } }, 'shared rate limits unreachable; counting on this instance');
      }
      return this.local.hitAll(buckets);
    }
  }

  async close(): Promise<void> {
    await this.shared.close();
    await this.local.close();
  }
}
