/** A connection to REDIS_URL with the service's settings (timeouts, pipelining, reconnects). */
import { Redis } from 'ioredis';
import type { FastifyBaseLogger } from 'fastify';

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
    // No automatic pipelining: the callers already send one command for many requests (the
    // limiter one script call per batch of sends, the bus one PUBLISH per round), and ioredis
    // builds and runs a Pipeline for every tick that sends one: at moderate rates that was about
    // a third of the main thread's time in the Redis and PostgreSQL drivers together
    // (docs/BENCHMARKS.md). Concurrent presence reads now go out as one write each.
    enableAutoPipelining: false,
    // The bus subscribes again by itself, so that it knows when Redis has the subscription (bus/redis.ts).
    autoResubscribe: false,
    ...(queueWhileDown ? {} : { commandTimeout: COMMAND_TIMEOUT_MS }),
  });
  // ioredis reconnects by itself; without a listener an error event would crash the process.
  client.on('error', (err: Error) => log.warn({ err: { message: err.message }, role }, 'redis connection error'));
  return client;
}
