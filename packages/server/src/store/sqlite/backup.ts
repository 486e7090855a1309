/**
 * Backup of the SQLite store while the service runs, with SQLite's online backup API
 * (better-sqlite3 `db.backup`). The copy is one consistent snapshot: the backup reads inside one
 * read transaction when it copies every page in a single step, which WAL mode allows without
 * stopping the service's writes. The copy is then switched out of WAL mode so that it is one
 * self-contained file, and checked.
 */
import Database from 'better-sqlite3';
import { existsSync, renameSync, rmSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError } from '../../config.js';
import { schemaVersion } from './db.js';

export interface BackupResult {
  dest: string;
  bytes: number;
  schemaVersion: number;
}

/** All remaining pages in the next step: one snapshot, no restart when the service writes meanwhile. */
const ALL_PAGES = 0x7fffffff;

export async function backupSqlite(source: string, dest: string): Promise<BackupResult> {
  const src = resolve(source);
  const out = resolve(dest);
  if (!existsSync(src)) throw new ConfigError(`no database at ${source}`);
  if ([src, `${src}-wal`, `${src}-shm`, `${src}-journal`].includes(out)) throw new ConfigError('the backup must not overwrite the live database');
  // Written beside the destination under another name and renamed at the end, so a failed or
  // interrupted backup never leaves a half-written file under the name of a good one.
  const partial = `${out}.partial`;
  rmSync(partial, { force: true });
  const db = new Database(src, { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    await db.backup(partial, { progress: () => ALL_PAGES });
  } finally {
    db.close();
  }
  let version: number;
  const copy = new Database(partial, { fileMustExist: true });
  try {
    copy.pragma('journal_mode = DELETE');
    const check = copy.pragma('quick_check', { simple: true });
    if (check !== 'ok') throw new Error(`the backup failed its integrity check: ${String(check)}`);
    version = schemaVersion(copy);
  } finally {
    copy.close();
  }
  renameSync(partial, out);
  return { dest: out, bytes: statSync(out).size, schemaVersion: version };
}
