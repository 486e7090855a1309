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
import type { Bucket, RateLimiter } from './types.js';

// KEYS the logs of one attempt's buckets; ARGV a unique member suffix, then limit and window ms
// per key. Returns 0 when the hit was counted in every log, else the milliseconds until each full
// log would allow one (the longest), and then counts nothing: a refused flood creates no keys.
const HIT_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local wait = 0
for i = 1, #KEYS do
  local limit = tonumber(ARGV[2 * i])
  local window = tonumber(ARGV[2 * i + 1])
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now - window)
  local n = redis.call('ZCARD', KEYS[i])
  if n >= limit then
    local oldest = redis.call('ZRANGE', KEYS[i], n - limit, n - limit, 'WITHSCORES')
    local w = tonumber(oldest[2]) + window - now
    if w > wait then wait = w end
  end
end
if wait > 0 then return wait end
for i = 1, #KEYS do
  redis.call('ZADD', KEYS[i], now, now .. ':' .. ARGV[1])
  redis.call('PEXPIRE', KEYS[i], tonumber(ARGV[2 * i + 1]))
end
return 0
`;

/** The script as a command of its own: ioredis sends EVALSHA (the script's hash, not its text) and loads the script once when Redis lacks it. */
const HIT_COMMAND = 'svcRateLimitHit';
type HitCommand = (numKeys: number, ...keysAndArgs: (string | number)[]) => Promise<unknown>;

/** Past this many bucket keys the cache of their Redis keys starts again: a bound on memory, not an eviction policy. */
const KEY_CACHE_MAX = 10_000;

export class RedisLimiter implements RateLimiter {
  private readonly unique = randomBytes(6).toString('hex');
  private counter = 0;
  private readonly hitCommand: HitCommand;
  /**
   * Bucket key → its Redis key. The HMAC is a pure function of the key and the secret, and the
   * same few keys (`msg:<nick>` of each sender) come back with every message: an HMAC each time
   * cost 1.3 % of the main thread in a profile of the PostgreSQL path's DM maximum.
   */
  private readonly redisKeys = new Map<string, string>();

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly secret: string,
  ) {
    // Each hit would otherwise write the whole script (about 700 bytes) to the socket and make
    // Redis hash it again: the hit rides on every message and login.
    redis.defineCommand(HIT_COMMAND, { lua: HIT_SCRIPT });
    const command = (redis as unknown as Record<string, HitCommand>)[HIT_COMMAND]!;
    this.hitCommand = command.bind(redis);
  }

  hit(key: string, limit: number, windowMs: number): Promise<number> {
    return this.hitAll([{ key, limit, windowMs }]);
  }

  async hitAll(buckets: readonly Bucket[]): Promise<number> {
    const member = `${this.unique}:${++this.counter}`;
    const keys = buckets.map((b) => this.redisKey(b.key));
    const args = buckets.flatMap((b) => [b.limit, b.windowMs]);
    const waitMs = Number(await this.hitCommand(keys.length, ...keys, member, ...args));
    return waitMs <= 0 ? 0 : Math.max(1, Math.ceil(waitMs / 1000));
  }

  private redisKey(key: string): string {
    let k = this.redisKeys.get(key);
    if (k === undefined) {
      k = `${this.prefix}rl:${createHmac('sha256', this.secret).update(key).digest('base64url').slice(0, 32)}`;
      if (this.redisKeys.size >= KEY_CACHE_MAX) this.redisKeys.clear();
      this.redisKeys.set(key, k);
    }
    return k;
  }

  async close(): Promise<void> {
    // A connection that is down refuses quit(); disconnect() stops its reconnect timer.
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
