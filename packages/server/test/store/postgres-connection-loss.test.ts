/**
 * A connection that PostgreSQL ends while the service holds it (a restart, a crash, an
 * administrator's pg_terminate_backend) fails the work on it and nothing else: the process goes
 * on and the pool opens a new connection. Found by the restart soak (restarts.test.ts), where
 * `pg_ctl stop -m immediate` ended an instance with an unhandled 'error' event.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import { autocommit, openPool, transaction } from '../../src/store/postgres/db.js';
import { dropSchema, freshSchema, sqlIn, testPgUrl } from '@svc/testkit/postgres';

/** Ends the server process of the connection `q` runs on, from another connection, and waits until the client has noticed. */
async function terminate(pid: number, schema: string): Promise<void> {
  await sqlIn(schema, 'SELECT pg_terminate_backend($1)', [pid]);
  await new Promise((r) => setTimeout(r, 300));
}

describe('store: postgres, a connection ended while in use', () => {
  let schema: string;
  let pool: pg.Pool;
  before(async () => {
    schema = await freshSchema();
    pool = openPool(testPgUrl, { schema, max: 2 });
  });
  after(async () => {
    await pool.end();
    await dropSchema(schema);
  });

  test('a transaction whose connection is ended between statements fails, and the process and the pool go on', async () => {
    await assert.rejects(
      transaction(pool, async (q) => {
        const [row] = await q.all<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        await terminate(row!.pid, schema);
        await q.all('SELECT 1');
      }),
    );
    assert.deepEqual((await pool.query('SELECT 1 AS x')).rows, [{ x: 1 }], 'the pool answers on a new connection');
  });

  test('an autocommit statement whose connection is ended before it runs fails, and the process and the pool go on', async () => {
    await assert.rejects(
      autocommit(pool, async (q) => {
        const [row] = await q.all<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        await terminate(row!.pid, schema);
        return q.all('SELECT 1');
      }),
    );
    assert.deepEqual((await pool.query('SELECT 1 AS x')).rows, [{ x: 1 }], 'the pool answers on a new connection');
  });
});
