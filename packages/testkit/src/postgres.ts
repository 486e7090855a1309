/**
 * PostgreSQL for tests: the server under test is the one at TEST_DATABASE_URL (default
 * postgres://127.0.0.1:5432/test; with no user in the URL, PGUSER or else the OS user, as psql does).
 * Each test gets its own schema with a random name, so tests and test files never see each
 * other's rows; drop it afterwards.
 *
 *   const schema = await freshSchema();
 *   const store = await PostgresStore.open(testPgUrl, { schema });
 *   …
 *   await store.close();
 *   await dropSchema(schema);
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { withDefaultUser } from '@svc/server/store/postgres/db';

export const testPgUrl = process.env.TEST_DATABASE_URL || 'postgres://127.0.0.1:5432/test';

/** A new random schema name, e.g. `t_3f9a…` (not created yet). */
export function schemaName(): string {
  return `t_${randomBytes(8).toString('hex')}`;
}

async function withClient<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: withDefaultUser(testPgUrl) });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** Creates an empty schema with a random name and returns the name. */
export async function freshSchema(): Promise<string> {
  const name = schemaName();
  await withClient((c) => c.query(`CREATE SCHEMA "${name}"`));
  return name;
}

/** Drops a schema made by freshSchema() (or by PostgresStore.open) and everything in it. */
export async function dropSchema(name: string): Promise<void> {
  if (!/^t_[0-9a-f]{16}$/.test(name)) throw new Error(`not a test schema: ${name}`);
  await withClient((c) => c.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`));
}

/** Runs one SQL statement in a schema, for tests that look at or tamper with stored rows. */
export async function sqlIn<T = Record<string, unknown>>(schema: string, text: string, params: unknown[] = []): Promise<T[]> {
  return withClient(async (c) => {
    await c.query(`SET search_path TO "${schema}"`);
    return (await c.query(text, params)).rows as T[];
  });
}

/** A statement as `pg` was asked to send it: its text, and its name and values when it has them. */
export interface SentQuery {
  text: string;
  name?: string;
  values?: unknown[];
}

/**
 * Runs `fn` with every statement any `pg` client of this process sends shown to `spy` first.
 * `spy` may return a promise to answer the statement in its place: a failure to inject, or
 * `send()` (the statement as it was asked) after something of its own, such as another
 * connection's write; otherwise the statement goes to the server. Spies nest. Tests see the
 * store's round trips this way.
 */
export async function spyQueries<T>(spy: (q: SentQuery, send: () => Promise<unknown>) => Promise<unknown> | void, fn: () => Promise<T>): Promise<T> {
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const q = args[0];
    const sent: SentQuery = typeof q === 'string' ? { text: q } : (q as SentQuery);
    const send = () => (query as (...a: unknown[]) => Promise<unknown>).apply(this, args);
    return spy(sent, send) ?? (query as (...a: unknown[]) => unknown).apply(this, args);
  } as unknown as typeof query;
  try {
    return await fn();
  } finally {
    pg.Client.prototype.query = query;
  }
}
