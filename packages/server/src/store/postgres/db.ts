/**
 * The PostgreSQL connection: a pool, a small query wrapper, transactions that retry when the
 * database aborts one to break a deadlock, and the numbered migrations.
 *
 * Several service instances share one database, so every rule that the SQLite store gets from
 * its single writer is enforced here by the database: row locks, ON CONFLICT and advisory locks.
 */
import { userInfo } from 'node:os';
import pg from 'pg';
import { NewerSchemaError, OlderSchemaError } from '../errors.js';
import { PG_MIGRATIONS, type PgMigration } from './migrations.js';

/** int8 (BIGINT, COUNT(*)) comes back as a JS number: our values are ms times and counters, far below 2^53. */
const INT8_OID = 20;
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === INT8_OID
      ? (v: string) => Number(v)
      : (pg.types.getTypeParser(oid, format as 'text') as (v: string) => unknown)) as pg.CustomTypesConfig['getTypeParser'],
};

/** A schema name we put into SQL unquoted-safe: plain lower-case identifiers only. */
const SCHEMA_RE = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * A URL without a user name means the OS user, as with libpq and psql. `pg` alone would fall
 * back to $USER only, which service managers and containers often leave unset.
 */
export function withDefaultUser(url: string): string {
  if (process.env.PGUSER || process.env.USER) return url;
  try {
    const u = new URL(url);
    if (u.username === '' && u.host !== '') {
      u.username = userInfo().username;
      return u.toString();
    }
  } catch {
    // not a URL pg would parse either: leave it to pg's own error
  }
  return url;
}

/**
 * Failing fast when PostgreSQL goes away (docs/SECURITY.md): a request
 * waits at most this long for a pooled connection or a new one, and at most QUERY_TIMEOUT_MS for
 * the answer to one statement, so a database that is down or unreachable turns into a 500 within
 * about 5 s instead of a request that hangs. Migrations, which may rightly take long, lift the
 * statement bound for themselves (see migrate()).
 */
export const CONNECT_TIMEOUT_MS = 2_500;
export const QUERY_TIMEOUT_MS = 4_000;
const MIGRATION_TIMEOUT_MS = 60 * 60 * 1000;

/**
 * Every statement of the service finds its rows by a key it names (a session, a device, an
 * account, a batch's ids), and has an index for it. On a small table the planner prefers to read
 * the whole table and filter it by the batch's keys, or hash-join it, since its model puts a scan
 * of a few pages below a few index probes; measured, that plan costs 4 to 7 times the index
 * probes (a lookup of six keys against 400 sessions and 600 devices: 0.22 ms against 0.03 ms of
 * execution), and it grows with the table where the probes do not. With sequential scans turned
 * off the planner takes the index whenever there is one, at every table size; a statement with
 * no index to use still scans (docs/POSTGRES.md). Such a plan carries the planner's
 * penalty for a disabled scan (10^10) in its cost, far past `jit_above_cost`, so it would compile
 * itself with LLVM at every execution (tens of milliseconds for a count): JIT is off too, and no
 * statement of a service that reads rows by key gains from it.
 *
 * The statements inside the send's functions (send_facts, send_write) and the prepared lookups
 * run on generic plans from their first execution. PostgreSQL would otherwise plan them again
 * for the values of every call, since a generic plan over arrays of keys never looks cheaper to
 * it than a custom one, and that planning was half of PostgreSQL's CPU for a send alone: about
 * 1.9 ms against 1.0 ms, and a third of it for batches of five (docs/BENCHMARKS.md). With
 * sequential scans off, a generic plan probes the same indexes as a custom one.
 */
const SESSION_SETTINGS = ['-c enable_seqscan=off', '-c jit=off', '-c plan_cache_mode=force_generic_plan'];

export function openPool(url: string, opts: { schema?: string | undefined; max?: number | undefined } = {}): pg.Pool {
  if (opts.schema !== undefined && !SCHEMA_RE.test(opts.schema)) throw new Error(`bad schema name ${JSON.stringify(opts.schema)}`);
  const config: pg.PoolConfig = {
    connectionString: withDefaultUser(url),
    max: opts.max ?? 10,
    types,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    query_timeout: QUERY_TIMEOUT_MS,
    // TCP keep-alive notices a peer that vanished without closing (a dead host, a cut link).
    keepAlive: true,
  };
  // Every connection is told these settings when it starts, so no query can run before them.
  // Options already in the URL are kept, and come last, so an operator's own setting wins (pg
  // would let the URL's value replace ours whole).
  let given: string | null = null;
  try {
    const u = new URL(config.connectionString!);
    given = u.searchParams.get('options');
    u.searchParams.delete('options');
    config.connectionString = u.toString();
  } catch {
    // not a URL: pg reports it when connecting
  }
  config.options = [...SESSION_SETTINGS, ...(opts.schema !== undefined ? [`-c search_path=${opts.schema}`] : []), ...(given ? [given] : [])].join(
    ' ',
  );
  const pool = new pg.Pool(config);
  // An idle connection that the server drops must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  return pool;
}

/** Query helpers over a pool or a client inside a transaction. */
export class Sql {
  constructor(readonly c: pg.Pool | pg.PoolClient) {}

  async all<T>(text: string, params: unknown[] = []): Promise<T[]> {
    return (await this.c.query(text, params)).rows as T[];
  }

  /**
   * A statement of the hot path as a named prepared statement: each connection parses and plans it
   * once and then only binds and executes it, where an unnamed statement is parsed and planned
   * again on every call (measured in docs/BENCHMARKS.md). `name` must be unique per text.
   */
  async prepared<T>(name: string, text: string, params: unknown[]): Promise<T[]> {
    return (await this.c.query({ name, text, values: params })).rows as T[];
  }

  async one<T>(text: string, params: unknown[] = []): Promise<T | undefined> {
    return (await this.c.query(text, params)).rows[0] as T | undefined;
  }

  /** Runs a statement; returns the number of rows it touched. */
  async run(text: string, params: unknown[] = []): Promise<number> {
    return (await this.c.query(text, params)).rowCount ?? 0;
  }

  /**
   * Runs several statements in one round trip (PostgreSQL's simple query protocol: no
   * parameters, values as literals, literals.ts) and returns the rows of each. After an error the
   * rest of the text does not run.
   */
  async script(text: string): Promise<unknown[][]> {
    const r = (await this.c.query(text)) as pg.QueryResult | pg.QueryResult[];
    return (Array.isArray(r) ? r : [r]).map((x) => x.rows as unknown[]);
  }
}

/** Deadlock (40P01) and serialization failure (40001): the database rolled back; running again is safe. */
function retryable(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return code === '40P01' || code === '40001';
}

const ATTEMPTS = 5;
/** Advisory lock key of migrations (namespace 0; the per-account locks of locks.ts use 1 to 3). */
const MIGRATE_LOCK = 0;

/**
 * A statement that timed out or whose connection broke: the connection is in an unknown state,
 * and a ROLLBACK on it would only wait out another timeout. The pool drops it instead (the
 * server rolls back an open transaction when its connection goes).
 */
function connectionLost(e: unknown): boolean {
  const msg = (e as { message?: unknown } | null)?.message;
  if (typeof msg !== 'string') return false;
  return msg === 'Query read timeout' || /Connection terminated|ECONNRESET|EPIPE|not queryable/i.test(msg);
}

/**
 * The database did not answer in time: a statement timed out, or no connection could be had.
 * Running the same work again at once would wait out the same bound again.
 */
export function timedOut(e: unknown): boolean {
  const msg = (e as { message?: unknown } | null)?.message;
  return typeof msg === 'string' && (msg === 'Query read timeout' || /timeout exceeded when trying to connect/i.test(msg));
}

/**
 * A pooled connection for statements of our own, and how to give it back. The pool listens for
 * errors on idle connections only, and pg's client emits 'error' when its connection ends under
 * it (PostgreSQL restarting or crashing, a network cut): with no listener that ends the process.
 * The listener here keeps the error; the statement that was running fails with it anyway, and
 * release() without a cause of its own gives it, so that the pool drops the connection.
 */
async function checkout(pool: pg.Pool): Promise<{ client: pg.PoolClient; release: (broken?: Error) => void }> {
  const client = await pool.connect();
  let lost: Error | undefined;
  const onError = (err: Error): void => {
    lost = err;
  };
  client.on('error', onError);
  return {
    client,
    release: (broken) => {
      client.off('error', onError);
      client.release(broken ?? lost);
    },
  };
}

/**
 * Runs `fn` in one transaction on one pooled connection; commits, or rolls back and rethrows.
 * A deadlock or serialization failure runs it again, up to `attempts` times in all.
 */
export async function transaction<T>(pool: pg.Pool, fn: (q: Sql) => Promise<T>, attempts = ATTEMPTS): Promise<T> {
  return scriptedTransaction(
    pool,
    async (q) => {
      await q.run('BEGIN');
      const result = await fn(q);
      await q.run('COMMIT');
      return result;
    },
    attempts,
  );
}

/**
 * transaction() for a function that sends BEGIN with its first statement and COMMIT with its last
 * (`Sql.script`), two round trips fewer. Whatever fails, what is open is rolled back, and a
 * deadlock or serialization failure runs the function again, up to `attempts` times in all.
 */
export async function scriptedTransaction<T>(pool: pg.Pool, body: (q: Sql) => Promise<T>, attempts = ATTEMPTS): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const { client, release } = await checkout(pool);
    let broken: Error | undefined;
    try {
      return await body(new Sql(client));
    } catch (e) {
      if (connectionLost(e)) broken = e as Error;
      else {
        try {
          // Also when no transaction is open (PostgreSQL only warns), e.g. BEGIN itself failed.
          await client.query('ROLLBACK');
        } catch (rollbackError) {
          broken = rollbackError as Error; // the connection is unusable: the pool must drop it
        }
      }
      if (attempt < attempts && retryable(e)) {
        await new Promise((r) => setTimeout(r, Math.random() * 10 * attempt));
        continue;
      }
      throw e;
    } finally {
      release(broken);
    }
  }
}

/**
 * Runs `fn`, which sends one statement, on one pooled connection in autocommit: the statement is
 * its own transaction. The database may still abort it to break a deadlock (or fail it as a
 * serialization failure), having written nothing; it then runs again, as transaction() does,
 * up to `attempts` times in all.
 */
export async function autocommit<T>(pool: pg.Pool, fn: (q: Sql) => Promise<T>, attempts = ATTEMPTS): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const { client, release } = await checkout(pool);
    let broken: Error | undefined;
    try {
      return await fn(new Sql(client));
    } catch (e) {
      if (connectionLost(e)) broken = e as Error;
      if (attempt < attempts && retryable(e)) {
        await new Promise((r) => setTimeout(r, Math.random() * 10 * attempt));
        continue;
      }
      throw e;
    } finally {
      release(broken);
    }
  }
}

/**
 * Creates the schema if asked, then applies the migrations this database lacks. A session
 * advisory lock keeps instances that start together from migrating at the same time.
 */
export async function migrate(pool: pg.Pool, schema: string | undefined, migrations: PgMigration[] = PG_MIGRATIONS, upgrade = true): Promise<void> {
  const { client, release } = await checkout(pool);
  const q = new Sql(client);
  try {
    await q.run('SELECT pg_advisory_lock($1, hashtext($2))', [MIGRATE_LOCK, schema ?? '']);
    try {
      if (schema !== undefined) await q.run(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
      await q.run('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)');
      const row = await q.one<{ v: number | null }>('SELECT MAX(version) AS v FROM schema_migrations');
      const current = row?.v ?? 0;
      const known = migrations.reduce((m, x) => Math.max(m, x.version), 0);
      if (current > known) throw new NewerSchemaError(current, known);
      if (!upgrade && current > 0 && current < known) throw new OlderSchemaError(current, known);
      for (const m of migrations) {
        if (m.version <= current) continue;
        await q.run('BEGIN');
        try {
          // pg reads query_timeout per query as well; its types only list it for the pool.
          await client.query({ text: m.sql, query_timeout: MIGRATION_TIMEOUT_MS } as pg.QueryConfig);
          await q.run('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [m.version, m.name, Date.now()]);
          await q.run('COMMIT');
        } catch (e) {
          await q.run('ROLLBACK');
          throw e;
        }
      }
    } finally {
      await q.run('SELECT pg_advisory_unlock($1, hashtext($2))', [MIGRATE_LOCK, schema ?? '']);
    }
  } finally {
    release();
  }
}
