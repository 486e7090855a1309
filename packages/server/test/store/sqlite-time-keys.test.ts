/**
 * An envelope's rowid is its time (time-keys.ts, migration 5): the purge finds old envelopes as a
 * range of the table, with no index on ts. Keys must never collide into a lost or refused send,
 * and the purge must stay exact: nothing younger than its cutoff goes, nothing older stays.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LIMITS } from '@svc/protocol';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { SLOTS_PER_MS, TimeKeys, keysBefore } from '../../src/store/sqlite/time-keys.js';
import { account, NOW } from './suite.js';
import { ct, iv, ulid } from '@svc/testkit/harness';

async function withStore(fn: (open: () => SqliteStore) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-keys-'));
  try {
    await fn(() => SqliteStore.open(join(dir, 'svc.db')));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function setup(s: SqliteStore): Promise<void> {
  await s.registerAccount(account('alice'));
  await s.registerAccount(account('bob'));
  await s.addDevice('alice', 'a-device-1', NOW);
  await s.addDevice('bob', 'b-device-1', NOW);
}

const send = (s: SqliteStore, now: number, id = ulid(now)) =>
  s.sendMessage({ id, from: 'alice', to: { dm: 'bob' }, keyId: 'dm', iv: iv(), ct: ct(), senderDevice: 'a-device-1', now });

const keyed = (s: SqliteStore) => s.db.prepare('SELECT rowid AS key, ts FROM envelopes ORDER BY rowid').all() as { key: number; ts: number }[];

test('time keys count the envelopes of a millisecond and start again at the next', () => {
  const k = new TimeKeys();
  assert.equal(k.first(1000), 1000 * SLOTS_PER_MS);
  assert.equal(k.first(1000), 1000 * SLOTS_PER_MS + 1);
  assert.equal(k.first(1001), 1001 * SLOTS_PER_MS);
  assert.equal(k.after(1001 * SLOTS_PER_MS + 5), 1001 * SLOTS_PER_MS + 6, 'a taken key moves the count past it');
  assert.equal(k.first(1001), 1001 * SLOTS_PER_MS + 7);
  assert.equal(k.first(1001.7), 1001 * SLOTS_PER_MS + 8, 'a fractional time counts in its millisecond');
});

test('past 1,024 envelopes in one millisecond the key is left to SQLite', () => {
  const k = new TimeKeys();
  for (let i = 0; i < SLOTS_PER_MS; i++) assert.equal(k.first(7), 7 * SLOTS_PER_MS + i);
  assert.equal(k.first(7), null);
  assert.equal(k.after(7 * SLOTS_PER_MS + SLOTS_PER_MS - 1), null);
});

test('the bound of a cutoff is above every key of an older millisecond and below every key of a younger one', () => {
  assert.equal(keysBefore(5000), 5001 * SLOTS_PER_MS);
  assert.equal(keysBefore(5000.5), 5001 * SLOTS_PER_MS);
});

test("a sent envelope's rowid is its time key, counted within its millisecond", async () => {
  await withStore(async (open) => {
    const s = open();
    try {
      await setup(s);
      await Promise.all([send(s, NOW), send(s, NOW), send(s, NOW + 1)]);
      assert.deepEqual(keyed(s), [
        { key: NOW * SLOTS_PER_MS, ts: NOW },
        { key: NOW * SLOTS_PER_MS + 1, ts: NOW },
        { key: (NOW + 1) * SLOTS_PER_MS, ts: NOW + 1 },
      ]);
      assert.deepEqual(s.db.prepare("SELECT name FROM sqlite_schema WHERE name = 'envelopes_ts'").all(), [], 'no index on ts is kept');
    } finally {
      await s.close();
    }
  });
});

test('a send whose time key is taken (a restart within the millisecond, a clock set back) takes the next key and is queued', async () => {
  await withStore(async (open) => {
    const first = open();
    await setup(first);
    await send(first, NOW);
    await send(first, NOW);
    await first.close();
    // A new process counts this millisecond from 0 again: its first two keys are taken.
    const s = open();
    try {
      const r = await send(s, NOW);
      assert.equal('status' in r && r.status, 'queued');
      assert.deepEqual(
        keyed(s).map((e) => e.key - NOW * SLOTS_PER_MS),
        [0, 1, 2],
      );
      assert.equal((await s.readQueue('b-device-1', 0, 10)).length, 3);
      // A retried id is still answered as a retry, not stored under another key.
      const id = ulid(NOW);
      await send(s, NOW + 1, id);
      const again = await send(s, NOW + 1, id);
      assert.equal('status' in again && again.status, 'retry');
      assert.equal(keyed(s).length, 4);
    } finally {
      await s.close();
    }
  });
});

test('the purge by time key is exact: an envelope one millisecond younger than the cutoff stays, one older goes', async () => {
  await withStore(async (open) => {
    const s = open();
    try {
      await setup(s);
      const cutoff = NOW + 10;
      const older = ulid(cutoff - 1);
      const atCutoff = ulid(cutoff);
      await send(s, cutoff - 1, older);
      await send(s, cutoff, atCutoff);
      const younger = ulid(cutoff + 1);
      await send(s, cutoff + 1, younger);
      // Queued entries past retention go first; then their envelopes, queued nowhere any more.
      const r = await s.purge(cutoff + LIMITS.queueRetentionMs);
      assert.equal(r.envelopes, 1);
      assert.deepEqual(
        (await s.readQueue('b-device-1', 0, 10)).map((e) => e.id),
        [atCutoff, younger],
      );
      assert.deepEqual(
        keyed(s).map((e) => e.ts),
        [cutoff, cutoff + 1],
      );
    } finally {
      await s.close();
    }
  });
});
