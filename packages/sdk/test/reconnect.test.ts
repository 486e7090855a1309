/**
 * EventStream.reconnectNow: when the app learns the network is back, a stream waiting out its
 * backoff connects at once; in any other state the call changes nothing.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ConnectionState, FetchLike } from '../src/index.js';
import { register, sleep, startServer, type TestServer } from './server.js';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

/** A network that can be cut: while cut, every request fails as fetch does offline. */
function cuttable(): { wrap: (f: FetchLike) => FetchLike; cut: boolean } {
  const net = {
    cut: false,
    wrap:
      (f: FetchLike): FetchLike =>
      (url, init) =>
        net.cut ? Promise.reject(new TypeError('fetch failed')) : f(url, init),
  };
  return net;
}

async function until(pred: () => boolean, what: string, states: ConnectionState[]): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; states ${states.join(',')}`);
    await sleep(20);
  }
}

test('reconnectNow connects at once while a retry waits out a long backoff', async () => {
  const net = cuttable();
  const bob = await register(server, undefined, undefined, { wrap: net.wrap });
  const states: ConnectionState[] = [];
  net.cut = true;
  // A minute of backoff: without reconnectNow the test would time out.
  const stream = bob.m.events({ onMsg: () => undefined, onState: (s) => states.push(s), backoffMs: { initial: 60_000, max: 60_000 } }).start();
  try {
    await until(() => stream.state === 'offline', 'offline', states);
    net.cut = false;
    stream.reconnectNow();
    await until(() => stream.state === 'live', 'live', states);
    assert.deepEqual(states, ['connecting', 'offline', 'connecting', 'replaying', 'live']);
  } finally {
    await stream.close();
  }
});

test('reconnectNow does nothing while connected or after close', async () => {
  const bob = await register(server);
  const states: ConnectionState[] = [];
  const stream = bob.m.events({ onMsg: () => undefined, onState: (s) => states.push(s) }).start();
  await until(() => stream.state === 'live', 'live', states);
  const opened = bob.requests.filter((r) => r === 'GET /api/events').length;
  stream.reconnectNow();
  await sleep(100);
  assert.equal(stream.state, 'live');
  assert.equal(bob.requests.filter((r) => r === 'GET /api/events').length, opened);
  await stream.close();
  stream.reconnectNow();
  await sleep(100);
  assert.equal(stream.state, 'closed');
  assert.deepEqual(states, ['connecting', 'replaying', 'live', 'closed']);
});
