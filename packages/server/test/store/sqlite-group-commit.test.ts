/**
 * Group commit on the embedded store: writes asked for in one turn of the event loop share one
 * transaction and one fsync, each is atomic on its own, and none is answered before the commit.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { GroupCommit } from '../../src/store/sqlite/group-commit.js';
import { openDatabase } from '../../src/store/sqlite/db.js';
import Database from 'better-sqlite3';

async function withStore(fn: (s: SqliteStore) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-group-'));
  const store = SqliteStore.open(join(dir, 'svc.db'));
  try {
    await fn(store);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const codes = async (s: SqliteStore) => (await s.listInvites()).map((i) => i.code).sort();

test('writes asked for in one turn of the event loop commit together, in one transaction', async () => {
  await withStore(async (s) => {
    const before = s.group.commits;
    await Promise.all(Array.from({ length: 50 }, (_, i) => s.createInvite(`code-${String(i).padStart(2, '0')}`, 1, null, 1)));
    assert.equal(s.group.commits - before, 1);
    assert.equal((await codes(s)).length, 50);
  });
});

test('a write is not run, and not answered, before the end of its turn; answered, it is in the file', async () => {
  await withStore(async (s) => {
    let answered = false;
    const p = s.createInvite('later', 1, null, 1).then(() => (answered = true));
    // Still in the same turn: the write is queued, not run.
    assert.deepEqual(await codes(s), []);
    assert.equal(answered, false);
    await p;
    assert.deepEqual(await codes(s), ['later']);
    // And it is in the file, not only in this connection: a second connection sees it.
    const other = SqliteStore.open(s.db.name);
    try {
      assert.deepEqual(await codes(other), ['later']);
    } finally {
      await other.close();
    }
  });
});

test('a write that fails is rolled back alone; the others in its batch still commit', async () => {
  await withStore(async (s) => {
    await s.createInvite('taken', 1, null, 1);
    const results = await Promise.allSettled([
      s.createInvite('a', 1, null, 1),
      s.createInvite('taken', 1, null, 1), // primary key violation
      s.createInvite('b', 1, null, 1),
    ]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    assert.deepEqual(await codes(s), ['a', 'b', 'taken']);
  });
});

test('a write whose multi-statement change fails halfway leaves none of its statements behind', async () => {
  await withStore(async (s) => {
    const boom = s.group.run(() => {
      s.db.prepare("INSERT INTO invites (code, uses_left, expires_at, created_at) VALUES ('half', 1, NULL, 1)").run();
      throw new Error('fails after its first statement');
    });
    const ok = s.createInvite('whole', 1, null, 1);
    await assert.rejects(boom, /fails after its first statement/);
    await ok;
    assert.deepEqual(await codes(s), ['whole']);
  });
});

test('when SQLite gives up the whole transaction, the writes before it are rejected and the rest still commit', async () => {
  await withStore(async (s) => {
    const before = s.createInvite('before', 1, null, 1);
    // Stands for an error SQLite answers by rolling back everything (disk full, I/O error).
    const lost = s.group.run(() => {
      s.db.prepare('ROLLBACK').run();
      throw new Error('transaction lost');
    });
    const after = s.createInvite('after', 1, null, 1);
    await assert.rejects(before, /transaction lost/);
    await assert.rejects(lost, /transaction lost/);
    await after;
    assert.deepEqual(await codes(s), ['after']);
    assert.equal(s.db.inTransaction, false);
  });
});

test('a write of one statement (no savepoint of its own) whose statement fails is undone by SQLite alone; the rest of the batch commits', async () => {
  await withStore(async (s) => {
    await s.createInvite('taken', 1, null, 1);
    const insert = (code: string) => () =>
      s.db.prepare('INSERT INTO invites (code, uses_left, expires_at, created_at) VALUES (?, 2, NULL, 1)').run(code);
    // A multi-row statement that fails at its second row (a primary key violation) after
    // inserting its first: SQLite's own statement journal undoes the first row too.
    const multi = () =>
      s.db.prepare("INSERT INTO invites (code, uses_left, expires_at, created_at) VALUES ('first-row', 2, NULL, 1), ('taken', 2, NULL, 1)").run();
    const results = await Promise.allSettled([
      s.group.run(insert('a'), true),
      s.group.run(multi, true),
      s.group.run(insert('b'), true),
      s.group.run(insert('taken'), true),
      s.createInvite('c', 1, null, 1),
    ]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'rejected', 'fulfilled', 'rejected', 'fulfilled'],
    );
    assert.deepEqual(await codes(s), ['a', 'b', 'c', 'taken']);
    assert.equal(
      (s.db.prepare("SELECT uses_left AS n FROM invites WHERE code = 'taken'").get() as { n: number }).n,
      1,
      'the failed statements changed nothing',
    );
  });
});

test('a write of one statement that SQLite answers by giving up the transaction loses the writes before it, as any write does', async () => {
  await withStore(async (s) => {
    const before = s.createInvite('before', 1, null, 1);
    const lost = s.group.run(() => {
      s.db.prepare('ROLLBACK').run();
      throw new Error('transaction lost');
    }, true);
    const after = s.createInvite('after', 1, null, 1);
    await assert.rejects(before, /transaction lost/);
    await assert.rejects(lost, /transaction lost/);
    await after;
    assert.deepEqual(await codes(s), ['after']);
  });
});

test('closing the store commits the writes still queued', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-group-'));
  try {
    const path = join(dir, 'svc.db');
    const s = SqliteStore.open(path);
    const p = s.createInvite('queued', 1, null, 1);
    await s.close();
    await p;
    const again = SqliteStore.open(path);
    assert.deepEqual(await codes(again), ['queued']);
    await again.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a write is answered only after the WAL holding it is synced; writes arriving during a sync share the next commit', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-group-'));
  try {
    const db = openDatabase(join(dir, 'svc.db'));
    // A sync that finishes only when the test says so.
    const pending: ((err: Error | null) => void)[] = [];
    const group = new GroupCommit(db, { sync: (done) => pending.push(done), close() {} });
    const insert = (code: string) => () =>
      db.prepare('INSERT INTO invites (code, uses_left, expires_at, created_at) VALUES (?, 1, NULL, 1)').run(code);
    const committed = () => {
      // What another connection sees is what is committed.
      const other = new Database(join(dir, 'svc.db'), { readonly: true });
      try {
        return (other.prepare('SELECT code FROM invites ORDER BY code').all() as { code: string }[]).map((r) => r.code);
      } finally {
        other.close();
      }
    };
    const answered: string[] = [];
    const first = group.run(insert('first')).then(() => answered.push('first'));
    await new Promise((r) => setImmediate(r));
    assert.equal(group.commits, 1);
    assert.deepEqual(committed(), ['first']);
    assert.equal(pending.length, 1, 'the first batch is being synced');
    // Two more turns of writes while that sync runs: they run, in one open transaction.
    const second = group.run(insert('second')).then(() => answered.push('second'));
    await new Promise((r) => setImmediate(r));
    const third = group.run(insert('third')).then(() => answered.push('third'));
    await new Promise((r) => setImmediate(r));
    assert.equal(group.commits, 1, 'no commit while a sync runs');
    assert.deepEqual(committed(), ['first']);
    assert.equal(pending.length, 1, 'one sync at a time');
    assert.deepEqual(answered, [], 'nothing is answered before its sync');
    pending.shift()!(null);
    await first;
    assert.deepEqual(answered, ['first']);
    assert.equal(group.commits, 2, 'what joined during the sync is committed together as it ends');
    assert.deepEqual(committed(), ['first', 'second', 'third']);
    assert.equal(pending.length, 1, 'and synced at once');
    pending.shift()!(null);
    await Promise.all([second, third]);
    assert.deepEqual(answered, ['first', 'second', 'third']);
    // A failed sync refuses the writes it covered: whether they are on disk is unknown.
    const lost = group.run(insert('unsure'));
    await new Promise((r) => setImmediate(r));
    pending.shift()!(new Error('EIO'));
    await assert.rejects(lost, /EIO/);
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the writes of a turn share one savepoint; when one throws, the turn is undone and its writes run again alone, as they would have', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-group-'));
  try {
    const db = openDatabase(join(dir, 'svc.db'));
    const pending: ((err: Error | null) => void)[] = [];
    const group = new GroupCommit(db, { sync: (done) => pending.push(done), close() {} }, { settleBeforeSync: true });
    const runs = new Map<string, number>();
    const insert = (code: string) => () => {
      runs.set(code, (runs.get(code) ?? 0) + 1);
      db.prepare('INSERT INTO invites (code, uses_left, expires_at, created_at) VALUES (?, 1, NULL, 1)').run(code);
      return code;
    };
    const codes = () => (db.prepare('SELECT code FROM invites ORDER BY code').all() as { code: string }[]).map((r) => r.code);
    await group.run(insert('earlier'));
    assert.equal(pending.length, 1, 'a sync runs: the next turns join one open transaction');

    // A turn without failures: one savepoint, each write run once.
    assert.deepEqual(await Promise.all([group.run(insert('a')), group.run(insert('b'))]), ['a', 'b']);
    assert.deepEqual([runs.get('a'), runs.get('b')], [1, 1]);

    // A turn with one write that throws after its statement: the turn is undone, the others
    // run again alone and settle with their own results; the earlier turns' writes stay.
    const turn = await Promise.allSettled([
      group.run(insert('c')),
      group.run(() => {
        insert('half')();
        throw new Error('fails after its statement');
      }),
      group.run(insert('d')),
    ]);
    assert.deepEqual(
      turn.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)),
      ['c', 'fails after its statement', 'd'],
    );
    assert.deepEqual([runs.get('c'), runs.get('half'), runs.get('d')], [2, 2, 1], 'up to the one that threw run together, then each alone');
    assert.deepEqual(codes(), ['a', 'b', 'c', 'd', 'earlier']);
    assert.ok(db.inTransaction, 'the open transaction went on');

    // All of it is committed and synced together once the sync under way ends.
    pending.shift()!(null);
    await new Promise((r) => setImmediate(r));
    assert.equal(pending.length, 1);
    const mark = group.lossMark();
    pending.shift()!(null);
    await group.durable(mark);
    const other = new Database(join(dir, 'svc.db'), { readonly: true });
    try {
      assert.deepEqual(
        (other.prepare('SELECT code FROM invites ORDER BY code').all() as { code: string }[]).map((r) => r.code),
        ['a', 'b', 'c', 'd', 'earlier'],
      );
    } finally {
      other.close();
    }
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the store keeps the WAL file it syncs: NORMAL on its connection, WAL journal', async () => {
  await withStore(async (s) => {
    assert.equal(s.db.pragma('journal_mode', { simple: true }), 'wal');
    assert.equal(s.db.pragma('synchronous', { simple: true }), 1); // NORMAL; the group commit syncs
    const syncs = s.group.syncs;
    await s.createInvite('x', 1, null, 1);
    assert.equal(s.group.syncs, syncs + 1);
  });
});

test('after a failed sync every later write is refused and the store is told once', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-group-'));
  try {
    const db = openDatabase(join(dir, 'svc.db'));
    const pending: ((err: Error | null) => void)[] = [];
    const fatal: unknown[] = [];
    const group = new GroupCommit(db, { sync: (done) => pending.push(done), close() {} }, { onFatal: (err) => fatal.push(err) });
    const insert = (code: string) => () =>
      db.prepare('INSERT INTO invites (code, uses_left, expires_at, created_at) VALUES (?, 1, NULL, 1)').run(code);
    const first = group.run(insert('first'));
    await new Promise((r) => setImmediate(r));
    // A write joins the open transaction while the sync runs; then the sync fails.
    const joined = group.run(insert('joined'));
    await new Promise((r) => setImmediate(r));
    pending.shift()!(new Error('EIO'));
    await assert.rejects(first, /EIO/);
    await assert.rejects(joined, /EIO/);
    await assert.rejects(group.run(insert('later')), /EIO/);
    assert.equal(fatal.length, 1);
    assert.equal(db.inTransaction, false);
    const codes = (db.prepare('SELECT code FROM invites').all() as { code: string }[]).map((r) => r.code);
    assert.ok(!codes.includes('joined') && !codes.includes('later'), 'nothing after the failed sync was committed');
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('when another process holds the write lock, one turn of writes waits for it once, not once per write', async () => {
  await withStore(async (s) => {
    s.db.pragma('busy_timeout = 50');
    const other = new Database(s.db.name);
    other.pragma('busy_timeout = 50');
    other.prepare('BEGIN IMMEDIATE').run();
    try {
      const results = await Promise.allSettled([s.createInvite('a', 1, null, 1), s.createInvite('b', 1, null, 1), s.createInvite('c', 1, null, 1)]);
      const reasons = results.map((r) => (r.status === 'rejected' ? String(r.reason) : 'fulfilled'));
      assert.match(reasons[0]!, /SQLITE_BUSY|database is locked/i, 'the first write met the lock');
      assert.match(reasons[1]!, /another process holds its write lock/);
      assert.match(reasons[2]!, /another process holds its write lock/);
    } finally {
      other.prepare('ROLLBACK').run();
      other.close();
    }
    await s.createInvite('after', 1, null, 1);
    assert.deepEqual(await codes(s), ['after']);
  });
});

test('a closing store refuses new writes and still commits those asked for before', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-group-'));
  try {
    const s = SqliteStore.open(join(dir, 'svc.db'));
    const before = s.createInvite('before', 1, null, 1);
    const closed = s.close();
    await assert.rejects(s.createInvite('late', 1, null, 1), /closing/);
    await before;
    await closed;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A group commit on a fresh file whose syncs finish only when the test says so. */
function heldSyncs(settleBeforeSync: boolean) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-group-'));
  const db = openDatabase(join(dir, 'svc.db'));
  const pending: ((err: Error | null) => void)[] = [];
  const fatal: unknown[] = [];
  const group = new GroupCommit(db, { sync: (done) => pending.push(done), close() {} }, { settleBeforeSync, onFatal: (e) => fatal.push(e) });
  const insert = (code: string) => () => db.prepare('INSERT INTO invites (code, uses_left, expires_at, created_at) VALUES (?, 1, NULL, 1)').run(code);
  const state = (p: Promise<unknown>) =>
    Promise.race([
      p.then(
        () => 'resolved',
        () => 'rejected',
      ),
      new Promise((r) => setImmediate(() => r('pending'))),
    ]);
  const turn = () => new Promise((r) => setImmediate(r));
  return { db, group, pending, fatal, insert, state, turn, done: () => (db.close(), rmSync(dir, { recursive: true, force: true })) };
}

test('settleBeforeSync: a write settles when its statements are done; durable() waits for the sync that covers it', async () => {
  const t = heldSyncs(true);
  try {
    const mark = t.group.lossMark();
    const first = t.group.run(t.insert('first'));
    await t.turn();
    assert.equal(await t.state(first), 'resolved', 'settled before its sync');
    assert.equal(t.pending.length, 1, 'its sync is under way');
    const barrier = t.group.durable(mark);
    assert.equal(await t.state(barrier), 'pending', 'not durable before the sync');
    // A write during that sync settles too, in the open transaction; the barrier asked now waits for its sync as well.
    const second = t.group.run(t.insert('second'));
    await t.turn();
    assert.equal(await t.state(second), 'resolved');
    const later = t.group.durable(mark);
    t.pending.shift()!(null);
    await barrier;
    assert.equal(await t.state(later), 'pending', 'the second write is committed only now, and its sync is under way');
    assert.equal(t.pending.length, 1);
    t.pending.shift()!(null);
    await later;
    assert.equal(await t.state(t.group.durable(mark)), 'resolved', 'nothing settled is waiting for the disk');
  } finally {
    t.done();
  }
});

test('settleBeforeSync: a failed sync rejects durable() for the writes it covered, asked before or after the failure', async () => {
  const t = heldSyncs(true);
  try {
    const mark = t.group.lossMark();
    await Promise.all([t.group.run(t.insert('a')), t.turn()]);
    const barrier = t.group.durable(mark);
    t.pending.shift()!(new Error('EIO'));
    await assert.rejects(barrier, /EIO/);
    await assert.rejects(t.group.durable(mark), /EIO/);
    await assert.rejects(t.group.durable(t.group.lossMark()), /EIO/, 'after a failed sync nothing is durable any more');
    assert.equal(t.fatal.length, 1);
  } finally {
    t.done();
  }
});

test('settleBeforeSync: when the transaction holding settled writes is given up, durable() rejects for every mark taken before', async () => {
  const t = heldSyncs(true);
  try {
    await Promise.all([t.group.run(t.insert('synced')), t.turn()]);
    // A sync runs; a request takes its mark and writes into the open transaction.
    const mark = t.group.lossMark();
    const settled = t.group.run(t.insert('settled'));
    await t.turn();
    assert.equal(await t.state(settled), 'resolved');
    // Another write makes SQLite give up the whole transaction (stands for disk full or an I/O error).
    const lost = t.group.run(() => {
      t.db.prepare('ROLLBACK').run();
      throw new Error('transaction lost');
    });
    await assert.rejects(lost, /transaction lost/);
    // The request asks only now, after the loss: it is still told.
    await assert.rejects(t.group.durable(mark), /lost/);
    // A request that began after the loss is not.
    const fresh = t.group.lossMark();
    t.pending.shift()!(null);
    await t.group.durable(fresh);
    const codes = (t.db.prepare('SELECT code FROM invites ORDER BY code').all() as { code: string }[]).map((r) => r.code);
    assert.deepEqual(codes, ['synced']);
  } finally {
    t.done();
  }
});

test('committed(): the open transaction commits without waiting for the sync under way; durable() still waits for the next sync', async () => {
  const t = heldSyncs(true);
  try {
    const mark = t.group.lossMark();
    await Promise.all([t.group.run(t.insert('first')), t.turn()]);
    assert.equal(t.pending.length, 1, 'the first write is committed and its sync under way');
    const second = t.group.run(t.insert('second'));
    await t.turn();
    assert.equal(await t.state(second), 'resolved');
    const durable = t.group.durable(mark);
    await t.group.committed(mark);
    // Committed: a second connection sees it, though no sync has ended.
    const other = new Database(t.db.name, { readonly: true });
    try {
      assert.deepEqual(
        (other.prepare('SELECT code FROM invites ORDER BY code').all() as { code: string }[]).map((r) => r.code),
        ['first', 'second'],
      );
    } finally {
      other.close();
    }
    assert.equal(t.pending.length, 1, 'no second sync began while the first runs');
    assert.equal(await t.state(durable), 'pending');
    t.pending.shift()!(null);
    assert.equal(await t.state(durable), 'pending', 'the sync that ended began before the second write was committed');
    assert.equal(t.pending.length, 1, 'the next sync covers the write committed meanwhile');
    t.pending.shift()!(null);
    await durable;
    assert.equal(await t.state(t.group.committed(mark)), 'resolved', 'nothing is left to commit');
  } finally {
    t.done();
  }
});

test('committed(): a sync that fails after an early commit rejects durable() for the writes committed during it', async () => {
  const t = heldSyncs(true);
  try {
    await Promise.all([t.group.run(t.insert('a')), t.turn()]);
    const mark = t.group.lossMark();
    await Promise.all([t.group.run(t.insert('b')), t.turn()]);
    await t.group.committed(mark);
    const durable = t.group.durable(mark);
    t.pending.shift()!(new Error('EIO'));
    await assert.rejects(durable, /EIO/);
    await assert.rejects(t.group.committed(t.group.lossMark()), /EIO/);
    assert.equal(t.pending.length, 0, 'nothing is synced after a failed sync');
  } finally {
    t.done();
  }
});

test('without settleBeforeSync a write settles only after its sync, and durable() has nothing to wait for', async () => {
  const t = heldSyncs(false);
  try {
    const mark = t.group.lossMark();
    const w = t.group.run(t.insert('w'));
    await t.turn();
    assert.equal(await t.state(w), 'pending');
    assert.equal(await t.state(t.group.durable(mark)), 'resolved');
    t.pending.shift()!(null);
    await w;
  } finally {
    t.done();
  }
});
