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

// KEYS the logs of every bucket of every attempt, in order; ARGV[1] a unique member prefix, ARGV[2]
// the number of attempts, then for each attempt its number of buckets and each bucket's limit
// and window ms. The attempts are judged one after the other, each seeing what the earlier ones
// counted, exactly as separate calls in this order would be. Returns one number per attempt: 0
// when the hit was counted in every one of its logs, else the milliseconds until each full log
// would allow one (the longest), and then it counted nothing: a refused flood creates no keys.
const HIT_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local waits = {}
local k = 0
local a = 3
for h = 1, tonumber(ARGV[2]) do
  local n = tonumber(ARGV[a])
  local wait = 0
  for i = 1, n do
    local limit = tonumber(ARGV[a + 2 * i - 1])
    local window = tonumber(ARGV[a + 2 * i])
    local key = KEYS[k + i]
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
    local c = redis.call('ZCARD', key)
    if c >= limit then
      local oldest = redis.call('ZRANGE', key, c - limit, c - limit, 'WITHSCORES')
      local w = tonumber(oldest[2]) + window - now
      if w > wait then wait = w end
    end
  end
  if wait == 0 then
    for i = 1, n do
      redis.call('ZADD', KEYS[k + i], now, now .. ':' .. ARGV[1] .. ':' .. h)
      redis.call('PEXPIRE', KEYS[k + i], tonumber(ARGV[a + 2 * i]))
    end
  end
  waits[h] = wait
  k = k + n
  a = a + 1 + 2 * n
end
return waits
`;

/** The script as a command of its own: ioredis sends EVALSHA (the script's hash, not its text) and loads the script once when Redis lacks it. */
const HIT_COMMAND = 'svcRateLimitHit';
type HitCommand = (numKeys: number, ...keysAndArgs: (string | number)[]) => Promise<unknown>;

/** Most attempts in one script call: a larger batch is split, so that no call holds Redis long. */
const MAX_ATTEMPTS_PER_CALL = 200;

interface QueuedHit {
  buckets: readonly Bucket[];
  resolve: (waitSeconds: number) => void;
  reject: (err: unknown) => void;
}

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
  /** Attempts asked for since the last call went out. */
  private queued: QueuedHit[] = [];

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

  /**
   * Queued, and sent with every other attempt made in the same synchronous stretch of code as one
   * script call: a batch of sends asks for all its hits at once (store/postgres/messages.ts), so
   * this process builds, writes and reads back one command instead of one per send. Redis's own
   * work per attempt stays the same (about 21 µs, in INFO commandstats); the saving is the
   * service's (docs/BENCHMARKS.md).
   */
  hitAll(buckets: readonly Bucket[]): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      this.queued.push({ buckets, resolve, reject });
      if (this.queued.length === 1) queueMicrotask(() => this.flush());
    });
  }

  private flush(): void {
    const all = this.queued;
    this.queued = [];
    for (let i = 0; i < all.length; i += MAX_ATTEMPTS_PER_CALL) void this.send(all.slice(i, i + MAX_ATTEMPTS_PER_CALL));
  }

  private async send(attempts: QueuedHit[]): Promise<void> {
    const keys: string[] = [];
    const args: (string | number)[] = [`${this.unique}:${++this.counter}`, attempts.length];
    for (const { buckets } of attempts) {
      args.push(buckets.length);
      for (const b of buckets) {
        keys.push(this.redisKey(b.key));
        args.push(b.limit, b.windowMs);
      }
    }
    let waits: unknown;
    try {
      waits = await this.hitCommand(keys.length, ...keys, ...args);
      if (!Array.isArray(waits) || waits.length !== attempts.length) throw new Error(`rate limit script answered ${String(waits)}`);
    } catch (err) {
      for (const a of attempts) a.reject(err);
      return;
    }
    attempts.forEach((a, i) => {
      const waitMs = Number(waits[i]);
      a.resolve(waitMs <= 0 ? 0 : Math.max(1, Math.ceil(waitMs / 1000)));
    });
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
