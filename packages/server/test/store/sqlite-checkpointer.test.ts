/**
 * Checkpoints run on a worker thread: the database file receives the WAL's pages while the
 * store runs, with the main connection's own (blocking) checkpoint kept only as a fallback.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SqliteStore } from '../../src/store/sqlite/index.js';

test("the database file receives the WAL's pages from the checkpoint thread, not from the store's commits", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-ckpt-'));
  const path = join(dir, 'svc.db');
  const store = SqliteStore.open(path);
  try {
    assert.equal(store.db.pragma('wal_autocheckpoint', { simple: true }), 10_000, 'the main connection checkpoints only past about 40 MB');
    const before = statSync(path).size;
    // About 400 pages of rows, far below the fallback: only the thread can move them.
    for (let b = 0; b < 20; b++) {
      await Promise.all(Array.from({ length: 100 }, (_, i) => store.createInvite(`${b}-${i}-${'x'.repeat(600)}`, 1, null, 1)));
    }
    let grown = false;
    for (let i = 0; i < 50 && !grown; i++) {
      await sleep(100);
      grown = statSync(path).size > before + 400_000;
    }
    assert.ok(grown, `the database file grew from ${before} to ${statSync(path).size} bytes`);
    assert.equal((await store.listInvites()).length, 2000);
  } finally {
    await store.close();
  }
  // Closed cleanly: the file opens again with every row.
  const again = SqliteStore.open(path);
  try {
    assert.equal((await again.listInvites()).length, 2000);
  } finally {
    await again.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
