/**
 * One account's burst must not take the pool from everyone else: writes that PostgreSQL would
 * serialise on one lock wait for each other in memory (lock-queue.ts), holding no connection.
 */
import { describe, test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { ATTACHMENT } from '@svc/protocol';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { id16 } from '@svc/testkit/harness';
import { dropSchema, freshSchema, testPgUrl } from '@svc/testkit/postgres';
import { NOW, account, wrapped } from './suite.js';

describe('store: postgres, one account at its lock and the pool', () => {
  let schema: string;
  let store: PostgresStore;
  beforeEach(async () => {
    schema = await freshSchema();
    store = await PostgresStore.open(testPgUrl, { schema, max: 2 });
    await store.registerAccount(account('alice'));
    await store.registerAccount(account('bob'));
  });
  afterEach(async () => {
    await store.close();
    await dropSchema(schema);
  });

  /** Starts `burst`, and while it runs, samples how many requests wait for a pooled connection. */
  async function whileRunning(burst: Promise<unknown>[], other: () => Promise<unknown>): Promise<number> {
    let mostWaiting = 0;
    let done = false;
    const all = Promise.all(burst).finally(() => (done = true));
    const sample = (async () => {
      while (!done) {
        mostWaiting = Math.max(mostWaiting, store.pool.waitingCount);
        await new Promise((r) => setImmediate(r));
      }
    })();
    await other();
    await all;
    await sample;
    return mostWaiting;
  }

  test("forty room creations of one account at once wait in memory: no request waits for a connection, and another account's room is made meanwhile", async () => {
    const burst = Array.from({ length: 40 }, () =>
      store.createRoom({ id: id16(), name: 'A', owner: 'alice', keyId: id16(), keys: [wrapped('alice')], now: NOW }),
    );
    const waiting = await whileRunning(burst, async () => {
      const r = await store.createRoom({ id: id16(), name: 'B', owner: 'bob', keyId: id16(), keys: [wrapped('bob')], now: NOW });
      assert.ok('room' in r, JSON.stringify(r));
    });
    assert.equal(waiting, 0);
    for (const r of await Promise.all(burst)) assert.ok('room' in r, JSON.stringify(r));
    assert.equal((await store.listRooms('alice')).length, 40);
  });

  test('twenty parts of one upload sent at once wait in memory, all stored', async () => {
    const id = id16();
    const data = new Uint8Array(ATTACHMENT.partBytes).fill(1);
    const burst = Array.from({ length: 20 }, (_, n) => store.putAttachmentPart({ id, nick: 'alice', n, data, now: NOW, quotaBytes: 1e9 }));
    const waiting = await whileRunning(burst, () => store.getAccount('bob'));
    assert.equal(waiting, 0);
    for (const r of await Promise.all(burst)) assert.deepEqual(r, { ok: true });
    assert.equal((await store.attachment(id))!.parts.length, 20);
  });
});
