/**
 * The backend modes the API suite runs in (issue: the same suite in three modes):
 *   TEST_MODE=sqlite      one instance on a fresh SQLite file (the default)
 *   TEST_MODE=postgres    one instance on a fresh PostgreSQL schema, with Redis
 *   TEST_MODE=postgres-2  two instances on one fresh schema and one Redis, behind a round-robin balancer
 * Each server of a test gets its own schema and its own Redis key prefix, dropped afterwards.
 */
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { Store } from '@svc/server/store/types';

export type TestMode = 'sqlite' | 'postgres' | 'postgres-2';
export const TEST_MODES: readonly TestMode[] = ['sqlite', 'postgres', 'postgres-2'];

function parseMode(raw: string | undefined): TestMode {
  if (raw === undefined || raw === '') return 'sqlite';
  if (!(TEST_MODES as readonly string[]).includes(raw)) throw new Error(`TEST_MODE must be one of ${TEST_MODES.join(', ')}`);
  return raw as TestMode;
}

export const TEST_MODE = parseMode(process.env.TEST_MODE);
export const testRedisUrl = process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379';

export interface Backend {
  instances: number;
  /** Configuration variables every instance gets. */
  env: Record<string, string>;
  /** A store for one instance, or undefined to let the app open DATABASE_URL. */
  store(): Promise<Store | undefined>;
  /** Runs one read-only SQL statement on the PostgreSQL schema (undefined in SQLite mode). */
  sql?: (text: string) => Promise<Record<string, unknown>[]>;
  destroy(): Promise<void>;
}

/** Deletes every Redis key under `prefix` (rate-limit logs and presence of a finished test). */
export async function dropRedisPrefix(prefix: string): Promise<void> {
  const { Redis } = await import('ioredis');
  const r = new Redis(testRedisUrl, { lazyConnect: true });
  await r.connect();
  try {
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      if (keys.length > 0) await r.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    await r.quit();
  }
}

export async function openBackend(mode: TestMode): Promise<Backend> {
  if (mode === 'sqlite') return { instances: 1, env: {}, store: async () => undefined, destroy: async () => {} };
  // Loaded here, not at the top: a SQLite-mode test process then never loads pg, ioredis or the
  // PostgreSQL store (about 140 ms of every test file's start).
  const [{ default: pgDriver }, { PostgresStore }, { withDefaultUser }, { dropSchema, freshSchema, testPgUrl }] = await Promise.all([
    import('pg'),
    import('@svc/server/store/postgres/index'),
    import('@svc/server/store/postgres/db'),
    import('./postgres.js'),
  ]);
  const schema = await freshSchema();
  const prefix = `test:${randomBytes(6).toString('hex')}:`;
  // One connection for the test's own statements, opened on first use: a new connection costs tens
  // of milliseconds, and the fuzz test reads the stored state before every request.
  let client: Promise<pg.Client> | null = null;
  const connect = async (): Promise<pg.Client> => {
    const c = new pgDriver.Client({ connectionString: withDefaultUser(testPgUrl) });
    // A connection that breaks is opened again by the next statement instead of crashing the test process.
    c.on('error', () => {
      client = null;
    });
    await c.connect();
    await c.query(`SET search_path TO "${schema}"`);
    return c;
  };
  return {
    instances: mode === 'postgres-2' ? 2 : 1,
    env: { REDIS_URL: testRedisUrl, REDIS_PREFIX: prefix },
    store: () => PostgresStore.open(testPgUrl, { schema }),
    async sql(text) {
      client ??= connect();
      return (await (await client).query(text)).rows as Record<string, unknown>[];
    },
    async destroy() {
      if (client) await (await client.catch(() => null))?.end();
      await dropSchema(schema);
      await dropRedisPrefix(prefix);
    },
  };
}
