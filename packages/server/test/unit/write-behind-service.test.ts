/**
 * The testkit's writeBehindService, which tests use to change the SQLite file of a service running
 * in the same process: it must wait for a write lock held by this process's own event loop
 * without blocking that loop, where a synchronous busy wait would hold both until its timeout.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { writeBehindService } from '@svc/testkit/harness';

/** A WAL database with one table `t`, held by `owner`, a connection of this process as the service's would be. */
async function withOwner(body: (owner: Database.Database, path: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-write-behind-'));
  const path = join(dir, 'db.sqlite');
  const owner = new Database(path);
  try {
    owner.pragma('journal_mode = WAL');
    owner.exec('CREATE TABLE t (v INTEGER)');
    await body(owner, path);
  } finally {
    owner.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

test('a write behind the service waits for a transaction this process holds open and frees it, without blocking the event loop', async () => {
  await withOwner(async (owner, path) => {
    // As the group commit does: a transaction left open until a later turn of the event loop.
    owner.exec('BEGIN IMMEDIATE');
    owner.exec('INSERT INTO t (v) VALUES (1)');
    setTimeout(() => owner.exec('COMMIT'), 50);

    await writeBehindService(path, 'INSERT INTO t (v) VALUES (?)', [2]);

    assert.equal(owner.inTransaction, false, 'the write waited for the commit');
    assert.deepEqual(
      owner.prepare('SELECT v FROM t ORDER BY v').all(),
      [{ v: 1 }, { v: 2 }],
      'both rows are there, the one written behind after the holder committed',
    );
  });
});

test('a write behind the service gives up with SQLITE_BUSY when the lock is never freed, and fails at once on any other error', async () => {
  await withOwner(async (owner, path) => {
    await assert.rejects(writeBehindService(path, 'INSERT INTO missing (v) VALUES (1)'), /no such table/);
    owner.exec('BEGIN IMMEDIATE');
    await assert.rejects(writeBehindService(path, 'INSERT INTO t (v) VALUES (1)', [], 100), { code: 'SQLITE_BUSY' });
    owner.exec('ROLLBACK');
    assert.deepEqual(owner.prepare('SELECT v FROM t').all(), [], 'nothing was written');
  });
});
