/**
 * The service's store for one run, made fresh and removed afterwards: a SQLite file in a temporary
 * folder (on the machine's disk, so commits are fsync'd for real), or a PostgreSQL schema of its
 * own plus a Redis key prefix of its own.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { Redis } from 'ioredis';
import { StoreCpu } from './store-cpu.js';

export interface Backend {
  name: 'sqlite' | 'postgres';
  /** Environment variables that point the service at this store. */
  env: Record<string, string>;
  /** What the report says about the store (never a password). */
  describe: string;
  /** CPU time of the PostgreSQL and Redis servers, or null (SQLite is inside the service's process). */
  storeCpu: StoreCpu | null;
  destroy(): Promise<void>;
}

/** A URL without a user means the OS user, as with psql (pg alone would need $USER, often unset). */
export function withUser(raw: string): string {
  const u = new URL(raw);
  if (u.username === '') u.username = process.env.PGUSER || userInfo().username;
  return u.toString();
}

const PG_URL = withUser(process.env.BENCH_DATABASE_URL || 'postgres://127.0.0.1:5432/test');
const REDIS_URL = process.env.BENCH_REDIS_URL || 'redis://127.0.0.1:6379';

export function sqliteBackend(): Backend {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-'));
  return {
    name: 'sqlite',
    env: { DATABASE_URL: `sqlite:${join(dir, 'svc.db')}` },
    describe: 'SQLite, WAL, group commit, the WAL fsync’d before every answer, file on the local ext4 disk',
    storeCpu: null,
    destroy: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

async function pgQuery(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

async function dropRedisPrefix(prefix: string): Promise<void> {
  const r = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 2 });
  await r.connect();
  try {
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await r.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    await r.quit();
  }
}

/**
 * A fresh schema `bench_<hex>` that the service reaches through the URL's
 * `options=-c search_path=…` (the pg driver passes it on at connect), and a fresh Redis prefix.
 */
export async function postgresBackend(): Promise<Backend> {
  const id = randomBytes(6).toString('hex');
  const schema = `bench_${id}`;
  const prefix = `bench:${id}:`;
  const storeCpu = await StoreCpu.find(PG_URL, REDIS_URL);
  await pgQuery(`CREATE SCHEMA "${schema}"`);
  const url = new URL(PG_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    name: 'postgres',
    env: { DATABASE_URL: url.toString(), REDIS_URL, REDIS_PREFIX: prefix },
    describe: `PostgreSQL (fresh schema) + Redis (fresh key prefix) on 127.0.0.1`,
    storeCpu,
    async destroy() {
      await pgQuery(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await dropRedisPrefix(prefix);
    },
  };
}
