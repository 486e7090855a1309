/**
 * Backups as docs/DEPLOY.md describes them: `admin backup FILE` while the service runs and
 * writes gives a consistent SQLite file, and the restore procedure (stop, move the old files
 * away, copy the backup in, start) brings back exactly what the backup held.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ORIGIN, Client, addDevice, dmBody, signup, type TestServer } from '@svc/testkit/harness';
import { startChildService } from '@svc/testkit/child';
import { admin } from './run-node.js';

interface Snapshot {
  accounts: number;
  envelopes: number;
  queue: number;
  orphans: number;
}

/** Counts in a backup file, and the invariants that hold only for a consistent snapshot. */
function inspect(path: string): Snapshot & { check: string; journal: string } {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const n = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
    return {
      check: db.pragma('integrity_check', { simple: true }) as string,
      journal: db.pragma('journal_mode', { simple: true }) as string,
      accounts: n('SELECT COUNT(*) AS n FROM accounts'),
      envelopes: n('SELECT COUNT(*) AS n FROM envelopes'),
      // Each send adds the envelope and its queue rows in one transaction: a torn copy would
      // show them out of step (checked below: two queue rows per envelope, no orphan row).
      queue: n('SELECT COUNT(*) AS n FROM queue'),
      orphans: n('SELECT COUNT(*) AS n FROM queue WHERE envelope_key NOT IN (SELECT rowid FROM envelopes)'),
    };
  } finally {
    db.close();
  }
}

test('admin backup copies a consistent database while the service writes, and the restore procedure brings it back', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-backup-'));
  const data = join(dir, 'data');
  const dbPath = join(data, 'svc.db');
  const env = { ORIGIN, DATABASE_URL: `sqlite:${dbPath}`, LIMIT_MESSAGES_PER_MIN: '1000000', LIMIT_WRITES_PER_MIN: '1000000' };
  let service = await startChildService({ env, ready: 'listening' });
  try {
    const server = { url: service.url } as TestServer;
    const a = await signup(server);
    const b = await signup(server);
    const da = await addDevice(a);
    await addDevice(b);
    await addDevice(b);

    // A writer that keeps sending while the backups run.
    let writing = true;
    let sent = 0;
    const writer = (async () => {
      while (writing) {
        const r = await a.post('/api/messages', dmBody(b.nick), { device: da });
        assert.equal(r.status, 202, r.text);
        sent++;
      }
    })();
    while (sent < 20) await new Promise((r) => setTimeout(r, 20));

    const backups: string[] = [];
    for (let i = 0; i < 3; i++) {
      const file = join(dir, `backup-${i}.db`);
      const r = await admin(['backup', file], env);
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /backup written to .*backup-\d\.db \(\d+ bytes, schema version \d+\)/);
      backups.push(file);
    }
    writing = false;
    await writer;

    let first: Snapshot | null = null;
    let last: Snapshot | null = null;
    for (const file of backups) {
      assert.ok(!existsSync(`${file}.partial`));
      const s = inspect(file);
      assert.equal(s.check, 'ok');
      assert.equal(s.journal, 'delete', 'the backup is one self-contained file');
      assert.equal(s.accounts, 2);
      assert.ok(s.envelopes >= 20, `only ${s.envelopes} envelopes`);
      assert.equal(s.queue, 2 * s.envelopes, "each envelope is queued for both of b's devices");
      assert.equal(s.orphans, 0);
      if (last) assert.ok(s.envelopes >= last.envelopes);
      first ??= s;
      last = s;
    }
    assert.ok(last!.envelopes > first!.envelopes, 'the service was not writing while the backups ran');
    const chosen = backups[1]!;
    const saved = inspect(chosen);

    // Write something after the backup, which the restore must take back.
    for (let i = 0; i < 5; i++) assert.equal((await a.post('/api/messages', dmBody(b.nick), { device: da })).status, 202);

    // The restore procedure of docs/DEPLOY.md: stop; move the database and its -wal and -shm
    // away; copy the backup in as the database; start.
    assert.equal(await service.stop(), 0);
    const old = join(dir, 'before-restore');
    mkdirSync(old);
    for (const suffix of ['', '-wal', '-shm']) if (existsSync(dbPath + suffix)) renameSync(dbPath + suffix, join(old, `svc.db${suffix}`));
    copyFileSync(chosen, dbPath);
    service = await startChildService({ env, ready: 'listening' });

    const restored = { url: service.url } as TestServer;
    // Sessions are in the backup: both clients are still signed in.
    const a2 = Object.assign(new Client(restored), { cookie: a.cookie, nick: a.nick });
    const b2 = Object.assign(new Client(restored), { cookie: b.cookie, nick: b.nick });
    assert.equal((await a2.get('/api/me')).status, 200);
    assert.equal((await b2.get(`/api/users/${a.nick}`)).status, 200);
    const stats = await admin(['stats'], env);
    assert.equal(stats.status, 0, stats.stderr);
    assert.match(stats.stdout, new RegExp(`^queued_envelopes +${saved.queue}$`, 'm'));
    assert.match(stats.stdout, /^accounts +2$/m);
  } finally {
    await service.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
