/**
 * The embedded store keeps sessions, device owners and device lists in memory: every change to
 * them is seen by the very next read, and a write that rolls back leaves nothing remembered.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { TargetFacts } from '../../src/store/types.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import type { Admit } from '../../src/store/types.js';
import { account, NOW } from './suite.js';
import { ulid } from '@svc/testkit/harness';

/** A store on a fresh file (its path is passed too) with alice, two sessions and a device, all read once. */
async function withStore(fn: (s: SqliteStore, file: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-cache-'));
  const file = join(dir, 'svc.db');
  const store = SqliteStore.open(file);
  try {
    await store.registerAccount(account('alice', { sessionId: 'alice-1' }));
    await store.createSession({ id: 'alice-2', nick: 'alice', now: NOW });
    await store.addDevice('alice', 'a-device-1', NOW);
    // Read once, so that every test starts with the rows remembered.
    assert.equal((await store.getSession('alice-1'))?.nick, 'alice');
    assert.equal((await store.getSession('alice-2'))?.nick, 'alice');
    assert.equal(await store.deviceOwner('a-device-1'), 'alice');
    await fn(store, file);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A DM from alice's device to bob, with the given id. */
function aliceToBob(s: SqliteStore, id: string, admit?: Admit) {
  return s.sendMessage(
    { id, from: 'alice', to: { dm: 'bob' }, keyId: 'dm', iv: 'AAAAAAAAAAAAAAAA', ct: 'A'.repeat(40), senderDevice: 'a-device-1', now: NOW },
    admit,
  );
}

test('a signed-out session is gone for the very next read', async () => {
  await withStore(async (s) => {
    await s.deleteSession('alice-1');
    assert.equal(await s.getSession('alice-1'), null);
    assert.equal((await s.getSession('alice-2'))?.nick, 'alice');
  });
});

test("a password change ends the other sessions for the very next read, and keeps the caller's", async () => {
  await withStore(async (s) => {
    const a = account('alice');
    assert.deepEqual(await s.changePassword('alice', { authKeyHash: a.authKeyHash, kdf: a.kdf, encryptedKey: a.encryptedKey }, 'alice-1'), [
      'alice-2',
    ]);
    assert.equal(await s.getSession('alice-2'), null);
    assert.equal((await s.getSession('alice-1'))?.nick, 'alice');
  });
});

test("a deleted account's sessions and devices are gone for the very next read", async () => {
  await withStore(async (s) => {
    await s.deleteAccount('alice', NOW);
    assert.equal(await s.getSession('alice-1'), null);
    assert.equal(await s.getSession('alice-2'), null);
    assert.equal(await s.deviceOwner('a-device-1'), null);
  });
});

test('a removed device has no owner for the very next read, and its id can then belong to someone else', async () => {
  await withStore(async (s) => {
    assert.equal(await s.deleteDevice('alice', 'a-device-1'), true);
    assert.equal(await s.deviceOwner('a-device-1'), null);
    await s.registerAccount(account('bob'));
    await s.addDevice('bob', 'a-device-1', NOW);
    assert.equal(await s.deviceOwner('a-device-1'), 'bob');
  });
});

test("a session's last use, once written, is what the next read returns", async () => {
  await withStore(async (s) => {
    await s.touchSession('alice-1', NOW + 1000);
    assert.equal((await s.getSession('alice-1'))?.lastUsedAt, NOW + 1000);
  });
});

test('an idle session purged is gone for the very next read', async () => {
  await withStore(async (s) => {
    const r = await s.purge(NOW + 31 * 24 * 3600 * 1000);
    assert.ok(r.sessionIds.includes('alice-1'));
    assert.equal(await s.getSession('alice-1'), null);
  });
});

test('a row read inside a write that then rolls back is not remembered', async () => {
  await withStore(async (s) => {
    const failed = s.group.run(() => {
      s.db.prepare('INSERT INTO sessions (id, nick, created_at, last_used_at) VALUES (?, ?, ?, ?)').run('ghost', 'alice', NOW, NOW);
      s.db.prepare("INSERT INTO devices (id, nick, created_at) VALUES ('ghost-device', 'alice', 1)").run();
      // Reads inside the transaction see the uncommitted rows; they must not stay in memory.
      void s.getSession('ghost');
      void s.deviceOwner('ghost-device');
      throw new Error('rolled back');
    });
    await assert.rejects(failed, /rolled back/);
    assert.equal(await s.getSession('ghost'), null);
    assert.equal(await s.deviceOwner('ghost-device'), null);
  });
});

test('a caller changing the record it got does not change what the store remembers', async () => {
  await withStore(async (s) => {
    const got = (await s.getSession('alice-1'))!;
    got.nick = 'mallory';
    assert.equal((await s.getSession('alice-1'))?.nick, 'alice');
  });
});

test('a deleted account is no longer live as a DM recipient at the very next send', async () => {
  await withStore(async (s) => {
    await s.registerAccount(account('bob'));
    const seen: TargetFacts[] = [];
    const admit = async (facts: TargetFacts): Promise<void> => {
      seen.push(facts);
    };
    const dm = (id: string) => aliceToBob(s, id, admit);
    assert.ok('status' in (await dm('01J0000000000000000000000B')));
    await s.deleteAccount('bob', NOW);
    assert.deepEqual(await dm('01J0000000000000000000000C'), { error: 'unknown_user' });
    assert.deepEqual(seen, [
      { room: false, recipientIsLive: true },
      { room: false, recipientIsLive: false },
    ]);
  });
});

test('a removed contact comes back with the next DM, and deleting an account forgets its contacts both ways', async () => {
  await withStore(async (s) => {
    await s.registerAccount(account('bob'));
    await s.addDevice('bob', 'b-device-1', NOW);
    const dm = (id: string, from: string, to: string, dev: string) =>
      s.sendMessage({ id, from, to: { dm: to }, keyId: 'dm', iv: 'AAAAAAAAAAAAAAAA', ct: 'A'.repeat(40), senderDevice: dev, now: NOW });
    await dm('01J0000000000000000000000A', 'alice', 'bob', 'a-device-1');
    assert.deepEqual(
      (await s.listContacts('alice')).map((c) => c.nick),
      ['bob'],
    );
    await s.deleteContact('alice', 'bob');
    assert.deepEqual(await s.listContacts('alice'), []);
    await dm('01J0000000000000000000000B', 'bob', 'alice', 'b-device-1');
    assert.deepEqual(
      (await s.listContacts('alice')).map((c) => c.nick),
      ['bob'],
      'the DM added the contact again',
    );
    await s.deleteAccount('bob', NOW);
    await s.registerAccount(account('carol'));
    await s.addDevice('carol', 'c-device-1', NOW);
    await dm('01J0000000000000000000000C', 'carol', 'alice', 'c-device-1');
    assert.deepEqual(
      (await s.listContacts('alice')).map((c) => c.nick),
      ['carol'],
    );
  });
});

test("a DM's targets follow every change to the devices: added, removed, subscribed, claimed, connected", async () => {
  await withStore(async (s) => {
    await s.registerAccount(account('bob'));
    await s.addDevice('bob', 'b-device-1', NOW);
    let n = 0;
    const targets = async () => {
      const r = await aliceToBob(s, ulid(NOW + n++));
      assert.ok('targets' in r);
      return r.targets.map((t) => `${t.deviceId}${t.pushable ? '+push' : ''}`);
    };
    assert.deepEqual(await targets(), ['b-device-1']);
    await s.addDevice('bob', 'b-device-2', NOW);
    await s.addDevice('alice', 'a-device-2', NOW);
    assert.deepEqual(await targets(), ['b-device-1', 'b-device-2', 'a-device-2'], "in device order, the sender's other device included");
    await s.setPushSubscription('b-device-2', { endpoint: 'https://push.example/x', p256dh: 'p', auth: 'a' });
    assert.deepEqual(await targets(), ['b-device-1', 'b-device-2+push', 'a-device-2']);
    assert.equal((await s.claimPush(['b-device-2'])).length, 1);
    assert.deepEqual(await targets(), ['b-device-1', 'b-device-2', 'a-device-2'], 'a push pending: not pushable again');
    await s.deviceConnected('b-device-2', NOW);
    assert.deepEqual(await targets(), ['b-device-1', 'b-device-2+push', 'a-device-2']);
    await s.dropPushSubscription('b-device-2', 'https://push.example/x');
    assert.deepEqual(await targets(), ['b-device-1', 'b-device-2', 'a-device-2']);
    await s.deleteDevice('bob', 'b-device-1');
    assert.deepEqual(await targets(), ['b-device-2', 'a-device-2']);
  });
});

test("another process's commit (the admin command) is seen by the next write: nothing it changed is served from memory", async () => {
  await withStore(async (s, file) => {
    await s.registerAccount(account('bob'));
    await s.addDevice('bob', 'b-device-1', NOW);
    await s.addDevice('bob', 'b-device-2', NOW);
    const first = await aliceToBob(s, '01J0000000000000000000000B');
    assert.ok('status' in first && first.status === 'queued');
    assert.deepEqual(first.targets.map((t) => t.deviceId).sort(), ['b-device-1', 'b-device-2'], 'both devices remembered as targets');
    // Another connection to the file, as the admin command holds one, removes a device.
    const other = new Database(file);
    other.prepare('DELETE FROM queue WHERE device_id = ?').run('b-device-2');
    other.prepare('DELETE FROM devices WHERE id = ?').run('b-device-2');
    other.close();
    const second = await aliceToBob(s, '01J0000000000000000000000C');
    assert.ok('status' in second && second.status === 'queued');
    assert.deepEqual(
      second.targets.map((t) => t.deviceId),
      ['b-device-1'],
      'the next write sees the change',
    );
    assert.equal(await s.deviceOwner('b-device-2'), null);
  });
});
