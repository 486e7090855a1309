/** Numbered migrations: applied once each and recorded; a database from a newer build is refused. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openDatabase, NewerSchemaError } from '../../src/store/sqlite/db.js';
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations.js';

function tempDb(): { path: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'svc-mig-'));
  return { path: join(dir, 'svc.db'), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

test('migrations run once on a new file and are recorded with their version', () => {
  const t = tempDb();
  try {
    openDatabase(t.path).close();
    const db = openDatabase(t.path);
    const rows = db.prepare('SELECT version FROM schema_migrations ORDER BY version').all() as { version: number }[];
    assert.deepEqual(
      rows.map((r) => r.version),
      SQLITE_MIGRATIONS.map((m) => m.version),
    );
    assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
    assert.equal(db.pragma('synchronous', { simple: true }), 2, 'synchronous=FULL: a commit is on disk before it returns');
    db.close();
  } finally {
    t.cleanup();
  }
});

test('a later migration applies to a database holding data of the previous schema', () => {
  const t = tempDb();
  try {
    const db = openDatabase(t.path);
    db.prepare("INSERT INTO meta (key, value) VALUES ('x', 'kept')").run();
    db.close();
    const next = [...SQLITE_MIGRATIONS, { version: 999, name: 'test column', sql: 'ALTER TABLE meta ADD COLUMN note TEXT' }];
    const db2 = openDatabase(t.path, next);
    assert.deepEqual(db2.prepare("SELECT value, note FROM meta WHERE key = 'x'").get(), { value: 'kept', note: null });
    db2.close();
  } finally {
    t.cleanup();
  }
});

test('a database written by a newer build is refused with a clear message', () => {
  const t = tempDb();
  try {
    openDatabase(t.path).close();
    const raw = new Database(t.path);
    raw.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(10_000, 'future', Date.now());
    raw.close();
    assert.throws(
      () => openDatabase(t.path),
      (e: unknown) => e instanceof NewerSchemaError && /newer/.test(e.message),
    );
  } finally {
    t.cleanup();
  }
});
