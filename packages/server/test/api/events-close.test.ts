/**
 * Streams close when what they stand on ends (docs/API.md: logout, password change,
 * account deletion, device deletion), and after
 * the close nothing more reaches them: the device counts as offline and its envelopes stay
 * queued for the next connection.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Stream, b64, ct, dmBody, iv, kdf, startServer, userWithDevices, type Client, type TestServer } from '@svc/testkit/harness';
import { assertError, gotMsg, login, replay, send } from './messaging-helpers.js';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

/** Alice (one device) and Bob with two sessions, each holding an open stream on its own device. */
async function setup() {
  const a = await userWithDevices(server, 1);
  const b = await userWithDevices(server, 2);
  const bob1 = b.c;
  const bob2 = await login(server, b.c);
  const [b1, b2] = b.devices as [string, string];
  const s1 = await Stream.open(bob1, b1);
  const s2 = await Stream.open(bob2, b2);
  assert.ok(await s1.ready());
  assert.ok(await s2.ready());
  return { alice: a.c, a1: a.devices[0]!, bob1, bob2, b1, b2, s1, s2 };
}

/** Online flag of a device as GET /api/devices reports it (docs/API.md). */
async function online(c: Client, device: string): Promise<boolean | undefined> {
  const r = await c.get('/api/devices');
  assert.equal(r.status, 200, r.text);
  return (r.json as { id: string; online: boolean }[]).find((d) => d.id === device)?.online;
}

test("close on logout: the streams of that session close; another session's stream stays and still gets messages", async () => {
  const { alice, a1, bob1, bob2, b1, b2, s1, s2 } = await setup();
  assert.equal((await bob1.post('/api/logout')).status, 204);
  assert.ok(await s1.closedByServer(), 'stream of the ended session is closed');
  const n = s1.events.length;

  const body = dmBody(bob2.nick);
  assert.equal((await send(alice, body, a1)).status, 202);
  assert.ok(await gotMsg(s2, body.id), "the other session's stream still receives");
  await Stream.settle();
  assert.equal(s1.events.length, n, 'nothing more reaches the closed stream');
  assert.equal(s2.ended, false);
  assert.equal(await online(bob2, b1), false);
  assert.equal(await online(bob2, b2), true);
  // the envelope waits in b1's queue; the ended session cannot reconnect
  assertError(await bob1.get(`/api/events?device=${b1}`), 401, 'unauthenticated');
  assert.deepEqual((await replay(bob2, b1)).msgIds, [body.id]);
  s2.close();
});

test("close on password change: the streams of every other session close; the calling session's stream stays", async () => {
  const { alice, a1, bob1, bob2, b1, b2, s1, s2 } = await setup();
  const r = await bob2.post('/api/password', { authKey: bob2.authKey, newAuthKey: b64(32), kdf: kdf(), encryptedKey: { iv: iv(), ct: ct(48) } });
  assert.equal(r.status, 204, r.text);
  assert.ok(await s1.closedByServer(), "the other session's stream is closed");
  const n = s1.events.length;

  const body = dmBody(bob2.nick);
  assert.equal((await send(alice, body, a1)).status, 202);
  assert.ok(await gotMsg(s2, body.id), "the calling session's stream still receives");
  await Stream.settle();
  assert.equal(s1.events.length, n, 'nothing more reaches the closed stream');
  assert.equal(s2.ended, false);
  assert.equal(await online(bob2, b1), false);
  assertError(await bob1.get(`/api/events?device=${b1}`), 401, 'unauthenticated');
  assert.deepEqual((await replay(bob2, b1)).msgIds, [body.id]);
  assert.equal(await online(bob2, b2), true);
  s2.close();
});

test('close on account deletion: every stream of the account closes', async () => {
  const { alice, a1, bob1, bob2, s1, s2 } = await setup();
  const bob3 = await login(server, bob1);
  const r = await bob3.del('/api/me', { authKey: bob3.authKey });
  assert.equal(r.status, 204, r.text);
  assert.ok(await s1.closedByServer());
  assert.ok(await s2.closedByServer());
  const [n1, n2] = [s1.events.length, s2.events.length];
  assertError(await send(alice, dmBody(bob2.nick), a1), 404, 'unknown_user');
  await Stream.settle();
  assert.equal(s1.events.length, n1);
  assert.equal(s2.events.length, n2);
});

test("close on device deletion: that device's stream closes, the same session's other device stream stays", async () => {
  const a = await userWithDevices(server, 1);
  const b = await userWithDevices(server, 3);
  const [b1, b2, b3] = b.devices as [string, string, string];
  const other = await login(server, b.c);
  const s1 = await Stream.open(b.c, b1);
  const s2 = await Stream.open(b.c, b2);
  const s3 = await Stream.open(other, b3);
  for (const s of [s1, s2, s3]) assert.ok(await s.ready());

  // deleted from another session and device: the stream of the deleted device closes wherever it is
  assert.equal((await other.del(`/api/devices/${b1}`, undefined, { device: b3 })).status, 204);
  assert.ok(await s1.closedByServer());
  const n = s1.events.length;
  const body = dmBody(b.c.nick);
  assert.equal((await send(a.c, body, a.devices[0])).status, 202);
  assert.ok(await gotMsg(s2, body.id));
  assert.ok(await gotMsg(s3, body.id));
  await Stream.settle();
  assert.equal(s1.events.length, n, "nothing more reaches the deleted device's stream");
  assertError(await b.c.get(`/api/events?device=${b1}`), 403, 'unknown_device');

  // a device may delete itself; its own stream closes too
  assert.equal((await b.c.del(`/api/devices/${b2}`, undefined, { device: b2 })).status, 204);
  assert.ok(await s2.closedByServer());
  assert.equal(s3.ended, false);
  s3.close();
});
