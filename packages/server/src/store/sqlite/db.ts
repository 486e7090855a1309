/** Opening the SQLite file: pragmas for durability and the numbered migrations. */
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { SQLITE_MIGRATIONS, type Migration } from './migrations.js';
import { NewerSchemaError, OlderSchemaError } from '../errors.js';

export type Db = Database.Database;

// Lives with the other backend-neutral errors; re-exported so existing imports keep working.
export { NewerSchemaError };

/** `upgrade: false` refuses a database of an older version instead of migrating it (a new file is always set up). */
export function openDatabase(path: string, migrations: Migration[] = SQLITE_MIGRATIONS, o: { upgrade?: boolean } = {}): Db {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  // WAL with synchronous=FULL: a commit is on disk (fsync'd) before the call returns, so an
  // answered 202 survives a process crash and a power loss alike. The service's store switches
  // its own connection to NORMAL and syncs the WAL itself, off the event loop, before it answers
  // (group-commit.ts, wal-sync.ts); other users of this function keep FULL.
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  try {
    migrate(db, migrations, o.upgrade ?? true);
  } catch (e) {
    db.close();
    throw e;
  }
  return db;
}

export function schemaVersion(db: Db): number {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
  const row = db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number | null };
  return row.v ?? 0;
}

export function migrate(db: Db, migrations: Migration[], upgrade = true): void {
  const current = schemaVersion(db);
  const known = migrations.reduce((m, x) => Math.max(m, x.version), 0);
  if (current > known) throw new NewerSchemaError(current, known);
  if (!upgrade && current > 0 && current < known) throw new OlderSchemaError(current, known);
  for (const m of migrations) {
    if (m.version <= current) continue;
    db.transaction(() => {
      db.exec(m.sql);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(m.version, m.name, Date.now());
    })();
  }
}
