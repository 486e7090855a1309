/**
 * Upgrades (docs/DEPLOY.md, "Upgrading"): the real process runs the migrations on start and
 * records them, and refuses a store written by a newer version, exiting non-zero with a message
 * that names both schema versions, on SQLite and on PostgreSQL.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { PG_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { dropSchema, freshSchema, sqlIn, testPgUrl } from '@svc/testkit/postgres';
import { SERVICE_MAIN, startChildService } from '@svc/testkit/child';
import { runNode } from './run-node.js';

const newest = (ms: { version: number }[]) => Math.max(...ms.map((m) => m.version));

test('SQLite: a start records the migrations; a database from a newer version stops the start with both versions named', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-upgrade-'));
  const dbPath = join(dir, 'svc.db');
  const env = { DATABASE_URL: `sqlite:${dbPath}` };
  try {
    const service = await startChildService({ env, ready: 'listening' });
    assert.equal(await service.stop(), 0);
    const known = newest(SQLITE_MIGRATIONS);
    const db = new Database(dbPath);
    const versions = (db.prepare('SELECT version FROM schema_migrations ORDER BY version').all() as { version: number }[]).map((r) => r.version);
    assert.deepEqual(
      versions,
      SQLITE_MIGRATIONS.map((m) => m.version),
    );
    // What a newer build would leave behind.
    db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(known + 1, 'from the future', Date.now());
    db.close();

    const r = await runNode([SERVICE_MAIN], { ...env, PORT: '0' });
    assert.equal(r.status, 3, 'exit code 3: a newer store, which a restart cannot cure');
    const out = r.stdout + r.stderr;
    assert.match(out, new RegExp(`schema version ${known + 1}, newer than this build knows \\(${known}\\)`), out);
    assert.match(out, /run a newer version/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('PostgreSQL: a database from a newer version stops the start with both versions named', async () => {
  const schema = await freshSchema();
  const u = new URL(testPgUrl);
  u.searchParams.set('options', `-c search_path=${schema}`);
  const env = { DATABASE_URL: u.toString() };
  try {
    const service = await startChildService({ env, ready: 'listening' });
    assert.equal(await service.stop(), 0);
    const known = newest(PG_MIGRATIONS);
    const rows = await sqlIn<{ version: number }>(schema, 'SELECT version FROM schema_migrations ORDER BY version');
    assert.deepEqual(
      rows.map((r) => r.version),
      PG_MIGRATIONS.map((m) => m.version),
    );
    await sqlIn(schema, 'INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [known + 1, 'from the future', Date.now()]);

    const r = await runNode([SERVICE_MAIN], { ...env, PORT: '0' });
    assert.equal(r.status, 3, 'exit code 3: a newer store, which a restart cannot cure');
    const out = r.stdout + r.stderr;
    assert.match(out, new RegExp(`schema version ${known + 1}, newer than this build knows \\(${known}\\)`), out);
  } finally {
    await dropSchema(schema);
  }
});
