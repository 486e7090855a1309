/**
 * The windows of the rate limits (docs/API.md): registration per client IP per hour, login
 * per (IP, nick) per 10 minutes, the shared write budget and messages per nick per minute. Each
 * limit is set to one, met, and the service's clock moved: a millisecond before the window has
 * passed the next attempt is still refused, at the window it is taken. The in-process limiter
 * keeps the service's clock; with Redis the limits keep Redis's own clock, which a test cannot
 * move, so these run where no REDIS_URL is set (the SQLite mode).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_MODE } from '@svc/testkit/modes';
import { Client, addDevice, assertError, dmBody, nick, registerBody, signup, startServer, ulid } from '@svc/testkit/harness';

const MINUTE = 60_000;
const skip = TEST_MODE !== 'sqlite' ? 'the limits keep Redis’s clock in this mode' : false;

/** A server whose given limits are one each, on a clock the test moves. */
async function oneEach(...limits: string[]) {
  const clock = { now: Date.now() };
  const server = await startServer(Object.fromEntries(limits.map((l) => [l, '1'])), { now: () => clock.now });
  return { server, clock };
}

test('registration: one per client IP per hour', { skip }, async () => {
  const { server, clock } = await oneEach('LIMIT_REGISTER_PER_HOUR');
  try {
    assert.equal((await new Client(server).post('/api/register', registerBody(nick()))).status, 201);
    assertError(await new Client(server).post('/api/register', registerBody(nick())), 429, 'rate_limited');
    clock.now += 60 * MINUTE - 1;
    assertError(await new Client(server).post('/api/register', registerBody(nick())), 429, 'rate_limited');
    clock.now += 1;
    assert.equal((await new Client(server).post('/api/register', registerBody(nick()))).status, 201, 'taken again after an hour');
  } finally {
    await server.close();
  }
});

test('login: one attempt per (client IP, nick) per 10 minutes', { skip }, async () => {
  const { server, clock } = await oneEach('LIMIT_LOGIN_PER_10MIN');
  try {
    const alice = await signup(server);
    const attempt = () => new Client(server).post('/api/login', { nick: alice.nick, authKey: alice.authKey });
    assert.equal((await attempt()).status, 200);
    assertError(await attempt(), 429, 'rate_limited');
    clock.now += 10 * MINUTE - 1;
    assertError(await attempt(), 429, 'rate_limited');
    clock.now += 1;
    assert.equal((await attempt()).status, 200, 'taken again after 10 minutes');
  } finally {
    await server.close();
  }
});

test('writes and messages: one per nick per minute each', { skip }, async () => {
  const { server, clock } = await oneEach('LIMIT_WRITES_PER_MIN', 'LIMIT_MESSAGES_PER_MIN');
  try {
    const alice = await signup(server);
    const bob = await signup(server);
    clock.now += MINUTE; // the write budget spent on adding the devices below is its own minute
    const dev = await addDevice(alice);
    assertError(await alice.post('/api/contacts', { nick: bob.nick }), 429, 'rate_limited');
    clock.now += MINUTE - 1;
    assertError(await alice.post('/api/contacts', { nick: bob.nick }), 429, 'rate_limited');
    clock.now += 1;
    assert.equal((await alice.post('/api/contacts', { nick: bob.nick })).status, 201, 'a write taken again after a minute');

    // The ULID of each message carries the service's time, which the test has moved.
    const send = () => alice.post('/api/messages', dmBody(bob.nick, ulid(clock.now)), { device: dev });
    assert.equal((await send()).status, 202);
    assertError(await send(), 429, 'rate_limited');
    clock.now += MINUTE - 1;
    assertError(await send(), 429, 'rate_limited');
    clock.now += 1;
    assert.equal((await send()).status, 202, 'a message taken again after a minute');
  } finally {
    await server.close();
  }
});
