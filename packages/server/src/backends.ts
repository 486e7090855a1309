/**
 * The parts chosen by configuration (README.md "Configuration"): the store from DATABASE_URL, and from
 * REDIS_URL either the in-process bus and limiter (one instance) or the Redis ones (several).
 */
import { Redis } from 'ioredis';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from './config.js';
import type { Store, StoreOpenOptions } from './store/types.js';
import { SqliteStore } from './store/sqlite/index.js';
import { PostgresStore } from './store/postgres/index.js';
import type { Bus } from './bus/types.js';
import type { LocalStreams } from './bus/streams.js';
import { MemoryBus } from './bus/memory.js';
import { RedisBus } from './bus/redis.js';
import type { RateLimiter } from './limits/types.js';
import { MemoryLimiter } from './limits/memory.js';
import { RedisLimiter } from './limits/redis.js';
import { FallbackLimiter } from './limits/fallback.js';

/**
 * The store of DATABASE_URL. The service upgrades an older schema as it opens it; the admin
 * command passes `upgrade: false`, since it may run beside a service of the older version. The
 * service also passes `settleBeforeSync`, since it answers a write only once it is durable
 * (`whenDurable`, domain/durability.ts).
 */
export async function openStore(config: Config, o: StoreOpenOptions = {}): Promise<Store> {
  if (config.database.kind === 'sqlite') return SqliteStore.open(config.database.path, o);
  return PostgresStore.open(config.database.url, o);
}

/** A command Redis does not answer within this time fails (a hung or unreachable server). */
const COMMAND_TIMEOUT_MS = 2_000;

/**
 * `queueWhileDown` false: while the connection is down a command fails at once instead of
 * waiting for a reconnect, so requests fail fast (or fall back) rather than hang. Only the
 * subscriber keeps the offline queue: its one command is SUBSCRIBE, which the bus sends again
 * each time the connection is back.
 */
export function redisClient(url: string, log: FastifyBaseLogger, role: string, queueWhileDown: boolean): Redis {
  const client = new Redis(url, {
    // A request waiting on Redis fails after a few reconnect attempts instead of hanging.
    maxRetriesPerRequest: 2,
    connectTimeout: 5_000,
    lazyConnect: true,
    enableOfflineQueue: queueWhileDown,
    // Commands issued in the same tick (limiter hits, publishes, presence reads of concurrent
    // requests) leave in one write and come back in one read. The subscriber issues none.
    enableAutoPipelining: !queueWhileDown,
    // The bus subscribes again by itself, so that it knows when Redis has the subscription (bus/redis.ts).
    autoResubscribe: false,
    ...(queueWhileDown ? {} : { commandTimeout: COMMAND_TIMEOUT_MS }),
  });
  // ioredis reconnects by itself; without a listener an error event would crash the process.
  client.on('error', (err: Error) => log.warn({ err: { message: err.message }, role }, 'redis connection error'));
  return client;
}

export async function openCoordination(
  config: Config,
  streams: LocalStreams,
  log: FastifyBaseLogger,
  o: { keySecret: string; presenceTtlS?: number | undefined },
): Promise<{ bus: Bus; limiter: RateLimiter }> {
  if (config.redisUrl === null) return { bus: new MemoryBus(streams), limiter: new MemoryLimiter() };
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
  return { bus, limiter: new FallbackLimiter(new RedisLimiter(limits, config.redisPrefix, o.keySecret), new MemoryLimiter(), log) };
}
