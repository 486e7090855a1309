/**
 * The shared limiter (REDIS_URL set): the same sliding log as the in-process limiter, kept in a
 * sorted set per key and checked and updated by one Lua script, so it is atomic across instances.
 * Time comes from the Redis server, so instances whose clocks differ still agree on the window.
 * Keys are an HMAC under the server secret: the limits are counted per nick and per client IP,
 * and neither should sit in Redis in a form that can be read or guessed back (a plain hash of an
 * IPv4 address is undone by trying all of them).
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { RateLimiter } from './types.js';

// KEYS[1] the log; ARGV limit, window ms, a unique member suffix.
// Returns 0 when the hit was counted, else the milliseconds until one would be allowed.
const HIT_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local n = redis.call('ZCARD', KEYS[1])
if n >= limit then
  local oldest = redis.call('ZRANGE', KEYS[1], n - limit, n - limit, 'WITHSCORES')
  return tonumber(oldest[2]) + window - now
end
redis.call('ZADD', KEYS[1], now, now .. ':' .. ARGV[3])
redis.call('PEXPIRE', KEYS[1], window)
return 0
`;

export class RedisLimiter implements RateLimiter {
  private readonly unique = randomBytes(6).toString('hex');
  private counter = 0;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly secret: string,
  ) {}

  async hit(key: string, limit: number, windowMs: number): Promise<number> {
    const member = `${this.unique}:${++this.counter}`;
    const hashed = createHmac('sha256', this.secret).update(key).digest('base64url').slice(0, 32);
    const waitMs = Number(await this.redis.eval(HIT_SCRIPT, 1, `${this.prefix}rl:${hashed}`, limit, windowMs, member));
    return waitMs <= 0 ? 0 : Math.max(1, Math.ceil(waitMs / 1000));
  }

  async close(): Promise<void> {
    // A connection that is down refuses quit(); disconnect() stops its reconnect timer.
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
