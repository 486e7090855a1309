/** Numbered migrations: applied once each and recorded; a database from a newer build is refused. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openDatabase, NewerSchemaError } from '../../src/store/sqlite/db.js';
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { ATTACHMENT } from '@svc/protocol';

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

test('migration 5 keys kept envelopes by their time in the order they came, and keeps every queue entry and its seq', () => {
  const t = tempDb();
  try {
    const v4 = openDatabase(
      t.path,
      SQLITE_MIGRATIONS.filter((m) => m.version <= 4),
    );
    const env = v4.prepare('INSERT INTO envelopes (id, sender, ts, json) VALUES (?, ?, ?, ?)');
    // Two envelopes of one millisecond, inserted out of time order with a third.
    env.run('E2', 'alice', 2000, '{"n":2}');
    env.run('E1', 'alice', 1000, '{"n":1}');
    env.run('E3', 'bob', 2000, '{"n":3}');
    const q = v4.prepare('INSERT INTO queue (device_id, envelope_id, ts) VALUES (?, ?, ?)');
    q.run('d1', 'E2', 2000);
    q.run('d2', 'E2', 2000);
    q.run('d1', 'E1', 1000);
    v4.prepare('DELETE FROM queue WHERE seq = 1').run();
    v4.close();

    const db = openDatabase(
      t.path,
      SQLITE_MIGRATIONS.filter((m) => m.version <= 5),
    );
    assert.deepEqual(db.prepare('SELECT rowid AS key, id, sender, ts, json FROM envelopes ORDER BY rowid').all(), [
      { key: 1000 * 1024, id: 'E1', sender: 'alice', ts: 1000, json: '{"n":1}' },
      { key: 2000 * 1024, id: 'E2', sender: 'alice', ts: 2000, json: '{"n":2}' },
      { key: 2000 * 1024 + 1, id: 'E3', sender: 'bob', ts: 2000, json: '{"n":3}' },
    ]);
    assert.deepEqual(db.prepare('SELECT seq, device_id AS d, envelope_id AS e, ts FROM queue ORDER BY seq').all(), [
      { seq: 2, d: 'd2', e: 'E2', ts: 2000 },
      { seq: 3, d: 'd1', e: 'E1', ts: 1000 },
    ]);
    assert.deepEqual(
      db.prepare("SELECT name FROM sqlite_schema WHERE name = 'envelopes_ts' OR (name = 'queue' AND sql LIKE '%AUTOINCREMENT%')").all(),
      [],
    );
    assert.throws(() => db.prepare("INSERT INTO queue (device_id, envelope_id, ts) VALUES ('d2', 'E2', 1)").run(), /UNIQUE/);
    // A new entry is placed after every kept one.
    assert.equal(db.prepare("INSERT INTO queue (device_id, envelope_id, ts) VALUES ('d3', 'E3', 2000)").run().lastInsertRowid, 4);
    db.close();
  } finally {
    t.cleanup();
  }
});

test('migration 6 keys each queue entry by its envelope and device, keeps every entry, and drops the by-id index', () => {
  const t = tempDb();
  try {
    const v5 = openDatabase(
      t.path,
      SQLITE_MIGRATIONS.filter((m) => m.version <= 5),
    );
    const env = v5.prepare('INSERT INTO envelopes (rowid, id, sender, ts, json) VALUES (?, ?, ?, ?, ?)');
    env.run(2000 * 1024, 'E2', 'alice', 2000, '{"n":2}');
    env.run(1000 * 1024, 'E1', 'alice', 1000, '{"n":1}');
    const q = v5.prepare('INSERT INTO queue (device_id, envelope_id, ts) VALUES (?, ?, ?)');
    q.run('d1', 'E2', 2000);
    q.run('d2', 'E2', 2000);
    q.run('d1', 'E1', 1000);
    // An entry whose envelope is gone could never be replayed (readQueue joins the envelope).
    q.run('d1', 'gone', 1500);
    v5.close();

    const db = openDatabase(t.path);
    assert.deepEqual(db.prepare('SELECT envelope_key AS k, device_id AS d FROM queue').all(), [
      { k: 1000 * 1024, d: 'd1' },
      { k: 2000 * 1024, d: 'd1' },
      { k: 2000 * 1024, d: 'd2' },
    ]);
    // One b-tree: the table is its own key, and nothing else indexes it.
    const indexes = db.prepare("SELECT origin FROM pragma_index_list('queue')").all() as { origin: string }[];
    assert.deepEqual(
      indexes.map((i) => i.origin),
      ['pk'],
    );
    assert.throws(() => db.prepare("INSERT INTO queue (envelope_key, device_id) VALUES (2048000, 'd2')").run(), /UNIQUE|PRIMARY KEY/);
    db.close();
  } finally {
    t.cleanup();
  }
});

test('migration 7 adds the attachment store to a database holding data of version 6, which stays as it was', async () => {
  const t = tempDb();
  try {
    const v6 = openDatabase(
      t.path,
      SQLITE_MIGRATIONS.filter((m) => m.version <= 6),
    );
    v6.prepare("INSERT INTO meta (key, value) VALUES ('k', 'v')").run();
    v6.prepare("INSERT INTO accounts (nick, created_at) VALUES ('ann', 1)").run();
    v6.close();

    const store = SqliteStore.open(t.path);
    try {
      assert.deepEqual(await store.getOrCreateMeta('k', () => 'other'), 'v');
      assert.deepEqual(
        await store.putAttachmentPart({
          id: 'A'.repeat(22),
          nick: 'ann',
          n: 0,
          data: new Uint8Array([1, 2, 3]),
          now: 5,
          quotaBytes: ATTACHMENT.partBytes,
        }),
        {
          ok: true,
        },
      );
      assert.deepEqual((await store.attachment('A'.repeat(22)))?.parts, [{ n: 0, bytes: 3 }]);
    } finally {
      await store.close();
    }
  } finally {
    t.cleanup();
  }
});
