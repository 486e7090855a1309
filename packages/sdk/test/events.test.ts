/** EventStream against a real server: replay and one batched ack, empty queue after reconnect, reconnect after the server closes, stop on 401, no ack without storage. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Inbox, register, sleep, startServer, type TestServer } from './server.js';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

const acks = (requests: string[]): number => requests.filter((r) => r === 'POST /api/ack').length;

test('queued envelopes replay, are acknowledged in one POST /api/ack after storing, and the queue is empty on reconnect', async () => {
  const [alice, bob] = [await register(server), await register(server)];
  for (let i = 0; i < 7; i++) await alice.m.sendDm(bob.m.nick, `m${i}`);
  const first = new Inbox(bob).start();
  await first.ready();
  assert.equal(first.envelopes.length, 7);
  assert.deepEqual(first.states.slice(0, 3), ['connecting', 'replaying', 'live']);
  assert.equal(acks(bob.requests), 1);
  assert.equal(first.stream.unacked, 0);
  await first.close();
  assert.equal(first.stream.state, 'closed');

  const second = new Inbox(bob).start();
  await second.ready();
  await sleep(100);
  assert.equal(second.envelopes.length, 0);
  await second.close();
});

test('live messages are acknowledged in debounced batches', async () => {
  const [alice, bob] = [await register(server), await register(server)];
  const inbox = new Inbox(bob, { ackDelayMs: 800 }).start();
  try {
    await inbox.ready();
    const before = acks(bob.requests);
    await Promise.all([0, 1, 2, 3, 4].map((i) => alice.m.sendDm(bob.m.nick, `live${i}`)));
    await inbox.count(5);
    await inbox.until(() => inbox.stream.unacked === 0, 'acks flushed');
    assert.equal(acks(bob.requests) - before, 1);
  } finally {
    await inbox.close();
  }
});

test('when the server closes the stream, the client goes offline, reconnects with backoff and receives again', async () => {
  const [alice, bob] = [await register(server), await register(server)];
  const inbox = new Inbox(bob).start();
  try {
    await inbox.ready();
    for (const c of server.app.streams.connections()) c.close();
    await inbox.until(() => inbox.states.includes('offline'), 'offline');
    await inbox.ready(2);
    assert.deepEqual(inbox.states.slice(0, 6), ['connecting', 'replaying', 'live', 'offline', 'connecting', 'replaying']);
    await alice.m.sendDm(bob.m.nick, 'after reconnect');
    await inbox.count(1);
    assert.equal((await bob.m.decryptEnvelope(inbox.envelopes[0]!)).ok, true);
  } finally {
    await inbox.close();
  }
});

test('an envelope whose handler fails is not acknowledged and comes again on the next connection', async () => {
  const [alice, bob] = [await register(server), await register(server)];
  const sent = await alice.m.sendDm(bob.m.nick, 'retry me');
  await alice.m.sendDm(bob.m.nick, 'fine');
  const failing = new Inbox(bob, { failIds: new Set([sent.id]) }).start();
  await failing.ready();
  assert.equal(failing.envelopes.length, 1);
  await failing.close();
  const again = new Inbox(bob).start();
  await again.ready();
  assert.deepEqual(
    again.envelopes.map((e) => e.id),
    [sent.id],
  );
  await again.close();
});

test('a session that ends stops the stream with reason unauthenticated instead of retrying', async () => {
  const bob = await register(server);
  const inbox = new Inbox(bob).start();
  await inbox.ready();
  await bob.api.logout();
  await inbox.until(() => inbox.stream.state === 'closed', 'closed');
  assert.equal(inbox.stream.closeReason, 'unauthenticated');
});

test('an unknown device stops the stream with reason unknown_device', async () => {
  const bob = await register(server);
  bob.api.setDevice('dev-not-registered-1');
  const inbox = new Inbox(bob).start();
  await inbox.until(() => inbox.stream.state === 'closed', 'closed');
  assert.equal(inbox.stream.closeReason, 'unknown_device');
});
