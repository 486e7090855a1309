/**
 * The admin command as an operator runs it (`node packages/server/dist/src/admin.js …`, the
 * script behind `npm run admin`), on a SQLite file and on PostgreSQL, beside a running server on
 * the same store: invites are listed and revoked (registration then answers 403 invalid_invite),
 * stats print counts and never a nick, purge runs.
 *
 * PostgreSQL: DATABASE_URL carries `?options=-c%20search_path%3D<schema>`, which the pg driver
 * passes to the server at connection start, so the command works in the test's fresh schema
 * with no option of its own.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { Client, addDevice, assertError, b64, dmBody, id16, nick, registerBody, startServer, type TestServer } from '@svc/testkit/harness';
import { dropSchema, freshSchema, sqlIn, testPgUrl } from '@svc/testkit/postgres';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openDatabase, schemaVersion } from '../../src/store/sqlite/db.js';
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { migrate, openPool } from '../../src/store/postgres/db.js';
import { PG_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { admin } from './run-node.js';

interface Backend {
  name: string;
  /**
   * `settle` writes what the service has not yet written of its store's counts: a PostgreSQL
   * instance raises queue lengths up to 100 ms after a send (docs/POSTGRES.md).
   */
  start(): Promise<{ server: TestServer; databaseUrl: string; settle(): Promise<void>; cleanup(): Promise<void> }>;
}

const backends: Backend[] = [
  {
    name: 'sqlite',
    async start() {
      const server = await startServer({ REGISTRATION: 'invite' }, {}, 'sqlite');
      return { server, databaseUrl: `sqlite:${server.dbPath}`, settle: async () => {}, cleanup: () => server.close() };
    },
  },
  {
    name: 'postgres',
    async start() {
      const schema = await freshSchema();
      const store = await PostgresStore.open(testPgUrl, { schema, max: 4 });
      const server = await startServer({ REGISTRATION: 'invite' }, { store });
      const u = new URL(testPgUrl);
      u.searchParams.set('options', `-c search_path=${schema}`);
      return {
        server,
        databaseUrl: u.toString(),
        settle: () => store.flushQueueCounts(),
        async cleanup() {
          await server.close();
          await dropSchema(schema);
        },
      };
    },
  },
];

async function register(server: TestServer, invite: string, n = nick('adm')) {
  const c = new Client(server);
  const r = await c.post('/api/register', { ...registerBody(n), invite });
  c.nick = n;
  return { c, r };
}

/** Rows of a printed table: header first, each line split on runs of two or more spaces. */
function rows(text: string): string[][] {
  return text
    .trimEnd()
    .split('\n')
    .map((l) => l.split(/ {2,}/));
}

for (const b of backends) {
  describe(`admin command on ${b.name}`, () => {
    let server: TestServer;
    let env: Record<string, string>;
    let cleanup: () => Promise<void>;
    let settle: () => Promise<void>;
    before(async () => {
      const s = await b.start();
      server = s.server;
      cleanup = s.cleanup;
      settle = s.settle;
      env = { DATABASE_URL: s.databaseUrl };
    });
    after(async () => cleanup());

    test('invite list shows code, uses left, expiry and state; revoke makes the code answer 403 invalid_invite', async () => {
      const created = await admin(['invite', 'create', '--uses', '2', '--expires', '1d'], env);
      assert.equal(created.status, 0, created.stderr);
      const code = created.stdout.trim();
      const forever = (await admin(['invite', 'create'], env)).stdout.trim();

      let list = await admin(['invite', 'list'], env);
      assert.equal(list.status, 0, list.stderr);
      let table = rows(list.stdout);
      assert.deepEqual(table[0], ['code', 'uses_left', 'expires', 'state']);
      const row = table.find((r) => r[0] === code);
      assert.ok(row, list.stdout);
      assert.equal(row[1], '2');
      const expires = Date.parse(row[2]!);
      assert.ok(Math.abs(expires - (Date.now() + 86_400_000)) < 60_000, row[2]);
      assert.equal(row[3], 'active');
      assert.deepEqual(table.find((r) => r[0] === forever)?.slice(1), ['1', 'never', 'active']);

      assert.equal((await register(server, code)).r.status, 201);
      list = await admin(['invite', 'list'], env);
      assert.equal(rows(list.stdout).find((r) => r[0] === code)?.[1], '1');

      const revoked = await admin(['invite', 'revoke', code], env);
      assert.equal(revoked.status, 0, revoked.stderr);
      assertError((await register(server, code)).r, 403, 'invalid_invite');
      list = await admin(['invite', 'list'], env);
      table = rows(list.stdout);
      assert.equal(
        table.find((r) => r[0] === code),
        undefined,
      );
      assert.ok(table.find((r) => r[0] === forever));

      const again = await admin(['invite', 'revoke', code], env);
      assert.equal(again.status, 3);
      assert.match(again.stderr, /no invite/);
    });

    test('stats prints counts only, never a nick', async () => {
      const before = rows((await admin(['stats'], env)).stdout);
      const count = (t: string[][], what: string) => Number(t.find((r) => r[0] === what)?.[1]);
      const code = (await admin(['invite', 'create', '--uses', '2'], env)).stdout.trim();
      const a = await register(server, code);
      const bb = await register(server, code);
      assert.equal(a.r.status, 201);
      assert.equal(bb.r.status, 201);
      const da = await addDevice(a.c);
      await addDevice(bb.c);
      const sent = await a.c.post('/api/messages', dmBody(bb.c.nick), { device: da });
      assert.equal(sent.status, 202, sent.text);
      const part = await a.c.put(`/api/attachments/${id16()}/parts/0`, { data: b64(10) });
      assert.equal(part.status, 204, part.text);

      await settle();
      const r = await admin(['stats'], env);
      assert.equal(r.status, 0, r.stderr);
      const after = rows(r.stdout);
      assert.deepEqual(
        after.map((x) => x[0]),
        ['what', 'accounts', 'devices', 'rooms', 'queued_envelopes', 'push_subscriptions', 'attachments', 'attachment_bytes'],
      );
      for (const line of after.slice(1)) assert.match(line[1]!, /^\d+$/);
      assert.equal(count(after, 'accounts') - count(before, 'accounts'), 2);
      assert.equal(count(after, 'devices') - count(before, 'devices'), 2);
      assert.equal(count(after, 'queued_envelopes') - count(before, 'queued_envelopes'), 1);
      assert.equal(count(after, 'attachments') - count(before, 'attachments'), 1);
      assert.equal(count(after, 'attachment_bytes') - count(before, 'attachment_bytes'), 10);
      for (const n of [a.c.nick, bb.c.nick]) assert.ok(!r.stdout.includes(n), 'a nick in the stats');
      assert.ok(!r.stdout.includes(da), 'a device id in the stats');
    });

    test('purge runs on demand and says what it removed', async () => {
      const r = await admin(['purge'], env);
      assert.equal(r.status, 0, r.stderr);
      const t = rows(r.stdout);
      assert.deepEqual(
        t.map((x) => x[0]),
        ['what', 'idle_sessions', 'envelopes', 'attachments'],
      );
      for (const line of t.slice(1)) assert.match(line[1]!, /^\d+$/);
    });

    if (b.name === 'postgres') {
      test('backup refuses PostgreSQL and points to pg_dump', async () => {
        const r = await admin(['backup', '/nonexistent/x.db'], env);
        assert.equal(r.status, 2);
        assert.match(r.stderr, /pg_dump/);
      });
    }
  });
}

/**
 * A newer build's admin command beside an older running service must not migrate the store
 * under it (SQLite migration 3 drops a column older builds write on every send). Only the
 * service's start upgrades a store; the admin command refuses one of an older version, and sets
 * up a new, empty one as before.
 */
describe('the admin command never upgrades a store of an older version', () => {
  test('sqlite: refused with a clear message and left at its version; after the service upgraded it, the command runs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-admin-old-'));
    try {
      const path = join(dir, 'svc.db');
      openDatabase(
        path,
        SQLITE_MIGRATIONS.filter((m) => m.version <= 2),
      ).close();
      const env = { DATABASE_URL: `sqlite:${path}` };
      const refused = await admin(['stats'], env);
      assert.notEqual(refused.status, 0);
      assert.match(refused.stderr, /schema version 2, older than this build .*start this version of the service once/);
      const raw = new Database(path, { readonly: true });
      assert.equal(schemaVersion(raw), 2, 'not migrated');
      raw.close();
      // What the service does as it starts:
      openDatabase(path).close();
      assert.equal((await admin(['stats'], env)).status, 0);
      // A new file is set up by the command as before.
      const fresh = await admin(['invite', 'create'], { DATABASE_URL: `sqlite:${join(dir, 'new.db')}` });
      assert.equal(fresh.status, 0, fresh.stderr);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('postgres: refused with a clear message and left at its version; after the service upgraded it, the command runs', async () => {
    const schema = await freshSchema();
    try {
      const pool = openPool(testPgUrl, { schema, max: 1 });
      await migrate(
        pool,
        schema,
        PG_MIGRATIONS.filter((m) => m.version <= 1),
      );
      await pool.end();
      const u = new URL(testPgUrl);
      u.searchParams.set('options', `-c search_path=${schema}`);
      const env = { DATABASE_URL: u.toString() };
      const refused = await admin(['stats'], env);
      assert.notEqual(refused.status, 0);
      assert.match(refused.stderr, /schema version 1, older than this build/);
      assert.deepEqual(await sqlIn(schema, 'SELECT MAX(version) AS v FROM schema_migrations'), [{ v: 1 }]);
      const store = await PostgresStore.open(testPgUrl, { schema, max: 1 });
      await store.close();
      assert.equal((await admin(['stats'], env)).status, 0);
    } finally {
      await dropSchema(schema);
    }
  });
});
