/**
 * The parts chosen by configuration (README.md "Configuration"): the store from DATABASE_URL, and from
 * REDIS_URL either the in-process bus and limiter (one instance) or the Redis ones (several).
 * The PostgreSQL and Redis parts are loaded only when configured: the embedded default starts
 * without loading `pg` or `ioredis` (together about 0.5 s of CPU at every start).
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from './config.js';
import type { Store, StoreOpenOptions } from './store/types.js';
import { SqliteStore } from './store/sqlite/index.js';
import type { Bus } from './bus/types.js';
import type { LocalStreams } from './bus/streams.js';
import { MemoryBus } from './bus/memory.js';
import type { RateLimiter } from './limits/types.js';
import { MemoryLimiter } from './limits/memory.js';
import { FallbackLimiter } from './limits/fallback.js';
import { FallbackKnownAddresses, MemoryKnownAddresses, type KnownAddresses } from './limits/known.js';

/**
 * The store of DATABASE_URL. The service upgrades an older schema as it opens it; the admin
 * command passes `upgrade: false`, since it may run beside a service of the older version. The
 * service also passes `settleBeforeSync`, since it answers a write only once it is durable
 * (`whenDurable`, domain/durability.ts).
 */
export async function openStore(config: Config, o: StoreOpenOptions = {}): Promise<Store> {
  if (config.database.kind === 'sqlite') return SqliteStore.open(config.database.path, o);
  const { PostgresStore } = await import('./store/postgres/index.js');
  return PostgresStore.open(config.database.url, o);
}

export async function openCoordination(
  config: Config,
  streams: LocalStreams,
  log: FastifyBaseLogger,
  o: { keySecret: string; presenceTtlS?: number | undefined; now?: (() => number) | undefined },
): Promise<{ bus: Bus; limiter: RateLimiter; known: KnownAddresses }> {
  // The in-process limiter keeps the service's clock (tests move it); Redis's keeps its own.
  if (config.redisUrl === null) return { bus: new MemoryBus(streams), limiter: new MemoryLimiter(o.now), known: new MemoryKnownAddresses(o.now) };
  const [{ redisClient }, { RedisBus }, { RedisLimiter }, { RedisKnownAddresses }] = await Promise.all([
    import('./redis-client.js'),
    import('./bus/redis.js'),
    import('./limits/redis.js'),
    import('./limits/known-redis.js'),
  ]);
  const pub = redisClient(config.redisUrl, log, 'bus', false);
  const sub = redisClient(config.redisUrl, log, 'subscriber', true);
  const limits = redisClient(config.redisUrl, log, 'limits', false);
  // Connect now so that a wrong REDIS_URL stops the start with a clear error.
  await Promise.all([pub.connect(), sub.connect(), limits.connect()]);
  const bus = await RedisBus.start(streams, {
    pub,
    sub,
    prefix: config.redisPrefix,
    ...(o.presenceTtlS !== undefined ? { presenceTtlS: o.presenceTtlS } : {}),
    onError: (err, what) => log.error({ err }, what),
  });
  return {
    bus,
    limiter: new FallbackLimiter(new RedisLimiter(limits, config.redisPrefix, o.keySecret), new MemoryLimiter(o.now), log),
    known: new FallbackKnownAddresses(new RedisKnownAddresses(limits, config.redisPrefix, o.keySecret, o.now), new MemoryKnownAddresses(o.now), log),
  };
}
