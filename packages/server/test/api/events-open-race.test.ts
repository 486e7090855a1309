/**
 * A stream being opened while its session or device ends (docs/API.md): the logout,
 * password change or deletion closes the streams it finds, and one still opening is not among
 * them yet. The stream must not stay open on what ended: it is refused as the checks would refuse
 * it. The opening is held, with a real store, between its checks and its attachment.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { Client, Stream, addDevice, assertError, signup, startServer } from '@svc/testkit/harness';

/**
 * A real store whose next device-owner lookup (the stream route's device check) reads its answer
 * and then waits until released before giving it: the check passes, and what it checked ends
 * before the stream is attached.
 */
function heldStore() {
  const inner = SqliteStore.open(join(mkdtempSync(join(tmpdir(), 'svc-open-race-')), 'svc.db'), { settleBeforeSync: true });
  let hold: { reached: () => void; release: Promise<void> } | null = null;
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === 'deviceOwner' && hold) {
        const h = hold;
        hold = null;
        return async (id: string) => {
          const owner = await target.deviceOwner(id);
          h.reached();
          await h.release;
          return owner;
        };
      }
      const v = Reflect.get(target, prop, receiver) as unknown;
      return typeof v === 'function' ? (v as (...x: unknown[]) => unknown).bind(target) : v;
    },
  });
  /** Holds the next lookup; resolves once it is reached, with the function that lets it go on. */
  const holdNext = () =>
    new Promise<() => void>((reached) => {
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      hold = { reached: () => reached(release), release: released };
    });
  return { store, holdNext };
}

async function openWhile(holdNext: () => Promise<() => void>, c: Client, device: string, end: () => Promise<void>) {
  const reached = holdNext();
  const opening = Stream.open(c, device);
  const release = await reached;
  await end();
  release();
  return opening;
}

/** A server on a held store, and an account with one device. */
async function setup() {
  const { store, holdNext } = heldStore();
  const server = await startServer({}, { store });
  const alice = await signup(server);
  const dev = await addDevice(alice);
  return { server, holdNext, alice, dev };
}

test('a stream opened while its session is logged out is refused 401 unauthenticated, and no stream stays open', async () => {
  const { server, holdNext, alice, dev } = await setup();
  try {
    const s = await openWhile(holdNext, alice, dev, async () => {
      const same = new Client(server);
      same.cookie = alice.cookie;
      assert.equal((await same.post('/api/logout')).status, 204);
    });
    assert.equal(s.status, 401);
    assert.equal(server.hasStream(dev), false, 'no stream of the device is open');
    s.close();
  } finally {
    await server.close();
  }
});

test('a stream opened while its device is deleted is refused 403 unknown_device, and no stream stays open', async () => {
  const { server, holdNext, alice, dev } = await setup();
  try {
    const s = await openWhile(holdNext, alice, dev, async () => {
      assert.equal((await alice.del(`/api/devices/${dev}`)).status, 204);
    });
    assert.equal(s.status, 403);
    assert.equal(server.hasStream(dev), false, 'no stream of the device is open');
    s.close();
    // The refusal is an ordinary JSON error, as the check itself would have answered.
    assertError(await alice.get(`/api/events?device=${dev}`), 403, 'unknown_device');
  } finally {
    await server.close();
  }
});
