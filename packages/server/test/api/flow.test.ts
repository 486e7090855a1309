/** A new user's path end to end: register, login, device, stream, DM, ack, reconnect. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, Stream, addDevice, dmBody, signup, startServer } from '@svc/testkit/harness';

test("a DM sent by one account reaches the other account's open stream, and once acked is not replayed", async () => {
  const server = await startServer();
  try {
    const alice = await signup(server);
    const bob = await signup(server);
    const aDev = await addDevice(alice);
    const bDev = await addDevice(bob);

    // login again as bob from a fresh client
    const bob2 = new Client(server);
    const login = await bob2.post('/api/login', { nick: bob.nick, authKey: bob.authKey });
    assert.equal(login.status, 200);
    assert.equal(login.json.nick, bob.nick);

    const s = await Stream.open(bob2, bDev);
    assert.equal(s.status, 200);
    assert.ok(await s.ready());

    const sent = await alice.post('/api/messages', dmBody(bob.nick), { device: aDev });
    assert.equal(sent.status, 202, sent.text);
    assert.ok(await s.until((ev) => ev.some((e) => e.event === 'msg')));
    const msg = s.named('msg')[0]!;
    assert.equal(msg.json.id, sent.json.id);
    assert.equal(msg.json.from, alice.nick);
    assert.equal(msg.id, sent.json.id);
    s.close();

    const ack = await bob2.post('/api/ack', { ids: [sent.json.id] }, { device: bDev });
    assert.equal(ack.status, 204);

    const s2 = await Stream.open(bob2, bDev);
    assert.ok(await s2.ready());
    assert.equal(s2.named('msg').length, 0);
    s2.close();
  } finally {
    await server.close();
  }
});

test('HEAD /api/events answers the stream headers without opening a stream or replacing the open one', async () => {
  const server = await startServer();
  try {
    const bob = await signup(server);
    const dev = await addDevice(bob);
    const s = await Stream.open(bob, dev);
    assert.ok(await s.ready());
    const head = await bob.req('HEAD', `/api/events?device=${dev}`);
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-type'), 'text/event-stream; charset=utf-8');
    assert.equal(head.text, '');
    await Stream.settle(100);
    assert.equal(s.ended, false, 'the open stream is still open');
    assert.equal((await bob.req('HEAD', '/api/events?device=nope')).status, 400);
    s.close();
  } finally {
    await server.close();
  }
});

test('a session expires 30 days after its last use, and use keeps it alive', async () => {
  let now = Date.now();
  const server = await startServer({}, { now: () => now });
  try {
    const alice = await signup(server);
    const day = 24 * 3600 * 1000;
    now += 20 * day;
    assert.equal((await alice.get('/api/me')).status, 200, 'used on day 20');
    now += 29 * day;
    assert.equal((await alice.get('/api/me')).status, 200, '29 days after the last use it still works');
    now += 30 * day + 1;
    const r = await alice.get('/api/me');
    assert.equal(r.status, 401);
    assert.equal(r.json.error, 'unauthenticated');
  } finally {
    await server.close();
  }
});
