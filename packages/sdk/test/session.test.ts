/**
 * Resuming a signed-in Messenger from a saved session (Messenger.exportSession / Messenger.resume)
 * against a real server, as a web app does after a page reload: the state goes through
 * structuredClone (what IndexedDB does) and the cookie jar stays; no password, no request.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Messenger, openAtRest, sealAtRest, type DecryptedMessage, type SessionState } from '../src/index.js';
import { fixtureIdentity } from './fixtures.js';
import { Inbox, client, loginDevice, register, reload, startServer, unlockAgain, type TestServer } from './server.js';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

const body = (r: DecryptedMessage): string => (r.ok ? (r.body ?? `!${r.plain.type}`) : `!${r.reason}`);

test('a resumed Messenger has the same account, device and history key, and sends and reads DMs and rooms', async () => {
  const alice = await register(server);
  const bob = await register(server);
  const room = await alice.m.createRoom('Resume ✓', [bob.m.nick]);
  const record = await sealAtRest(alice.m.historyKey, { body: 'kept' }, 'ctx');

  const state = alice.m.exportSession();
  assert.equal(state.privateKey.extractable, false);
  const stored = structuredClone(state);
  const again = await reload(server, alice, stored);
  // Resuming is local: no request until the app makes one.
  assert.deepEqual(again.requests, []);
  assert.deepEqual([again.m.nick, again.m.publicKey, again.m.kdf, again.api.device], [alice.m.nick, alice.m.publicKey, alice.m.kdf, alice.deviceId]);
  assert.deepEqual(await openAtRest(again.m.historyKey, record, 'ctx'), { body: 'kept' });
  assert.equal((await again.api.me()).nick, alice.m.nick);

  const aliceIn = new Inbox(again).start();
  const bobIn = new Inbox(bob).start();
  try {
    await Promise.all([aliceIn.ready(), bobIn.ready()]);
    // Room keys come back with the first `ready` (the Messenger re-reads the rooms).
    await aliceIn.until(() => again.m.keyring.keyIds(room.id).length === 2, 'room keys after resume');
    await again.m.sendDm(bob.m.nick, 'after reload');
    await again.m.sendRoom(room.id, 'room after reload');
    await bobIn.count(2);
    assert.deepEqual(await Promise.all(bobIn.envelopes.map(async (e) => body(await bob.m.decryptEnvelope(e)))), [
      'after reload',
      'room after reload',
    ]);
    await bob.m.sendDm(alice.m.nick, 'welcome back');
    await aliceIn.count(1);
    assert.equal(body(await again.m.decryptEnvelope(aliceIn.envelopes[0]!)), 'welcome back');
  } finally {
    await Promise.all([aliceIn.close(), bobIn.close()]);
  }
});

test('a session ended at the service resumes locally, then its first request says to log in again', async () => {
  const alice = await register(server);
  const stored = structuredClone(alice.m.exportSession());
  // A password change on another device ends every other session, this one included.
  const other = await loginDevice(server, alice.m.nick, alice.password, `dev-${alice.m.nick}-2`);
  await other.m.changePassword(alice.password, 'new password');
  const again = await reload(server, alice, stored);
  await assert.rejects(again.api.me(), (e: { code?: string; next?: string }) => e.code === 'unauthenticated' && e.next === 'log_in');
});

test('the state to store changes with the KDF parameters after a password change, and is refused after sign-out', async () => {
  const alice = await register(server);
  const before = alice.m.exportSession();
  await alice.m.changePassword(alice.password, 'another password', { kdf: { m: 19456, t: 3, p: 1 } });
  const after = alice.m.exportSession();
  assert.notEqual(after.kdf.salt, before.kdf.salt);
  assert.equal(after.kdf.t, 3);
  assert.equal((await reload(server, alice, structuredClone(after))).m.kdf.salt, after.kdf.salt);
  await alice.m.logout();
  assert.throws(() => alice.m.exportSession(), { code: 'not_ready' });
});

test('malformed, foreign-format or mismatched states are refused with bad_session (next step: log in)', async () => {
  const alice = await register(server);
  const good = alice.m.exportSession();
  const bob = await fixtureIdentity('bob');
  const extractable = await crypto.subtle.generateKey({ name: 'ECDH', namedCurve: 'P-256' }, true, ['deriveBits']);
  const hmac = await crypto.subtle.generateKey({ name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const bad: [string, unknown][] = [
    ['null', null],
    ['JSON round trip (the CryptoKey is lost)', JSON.parse(JSON.stringify(good))],
    ['another format', { ...good, v: 2 }],
    ['bad nick', { ...good, nick: 'Alice!' }],
    ['public key not a point', { ...good, publicKey: 'A'.repeat(87) }],
    ["another account's private key", { ...good, privateKey: bob.privateKey }],
    ['an extractable private key', { ...good, privateKey: extractable.privateKey }],
    ['not an ECDH key', { ...good, privateKey: hmac }],
    ['KDF out of bounds', { ...good, kdf: { ...good.kdf, m: 1024 } }],
    ['bad device id', { ...good, deviceId: 'x' }],
  ];
  for (const [what, state] of bad) {
    await assert.rejects(
      Messenger.resume({ api: alice.api }, state),
      (e: { code?: string; next?: string }) => e.code === 'bad_session' && e.next === 'log_in',
      what,
    );
  }
  // Before ensureDevice the device id is null, and a resumed Messenger has none either.
  const fresh = client(server);
  await fresh.m.register({ nick: `${alice.m.nick}_b`, password: 'pw', kdf: { m: 19456, t: 2, p: 1 } });
  const s: SessionState = fresh.m.exportSession();
  assert.equal(s.deviceId, null);
  assert.equal((await reload(server, fresh, structuredClone(s))).api.device, undefined);
});

test('a saved session without its private key opens again with the password alone: one GET /api/me, no new login, the same keys', async () => {
  const alice = await register(server);
  const bob = await register(server);
  const record = await sealAtRest(alice.m.historyKey, { body: 'kept' }, 'ctx');
  const { privateKey: _dropped, ...locked } = structuredClone(alice.m.exportSession());
  // A wrong password opens nothing and changes nothing at the service.
  await assert.rejects(unlockAgain(server, alice, locked, 'not the password'), { code: 'bad_identity' });
  const again = await unlockAgain(server, alice, locked, alice.password);
  assert.deepEqual(again.requests, ['GET /api/me']);
  assert.deepEqual([again.m.nick, again.m.publicKey, again.m.kdf, again.api.device], [alice.m.nick, alice.m.publicKey, alice.m.kdf, alice.deviceId]);
  assert.deepEqual(await openAtRest(again.m.historyKey, record, 'ctx'), { body: 'kept' });
  assert.equal(again.m.exportSession().privateKey.extractable, false);
  // The service session is the one it was: sending works without a login.
  const bobIn = new Inbox(bob).start();
  try {
    await bobIn.ready();
    await again.m.sendDm(bob.m.nick, 'after unlock');
    await bobIn.count(1);
    assert.equal(body(await bob.m.decryptEnvelope(bobIn.envelopes[0]!)), 'after unlock');
  } finally {
    await bobIn.close();
  }
});

test('unlocking a session the service ended says so (unauthenticated), and a state of another key is refused', async () => {
  const alice = await register(server);
  const { privateKey: _dropped, ...locked } = structuredClone(alice.m.exportSession());
  const carol = await register(server);
  await assert.rejects(unlockAgain(server, alice, { ...locked, publicKey: carol.m.publicKey }, alice.password), { code: 'bad_response' });
  const other = await loginDevice(server, alice.m.nick, alice.password, `dev-${alice.m.nick}-2`);
  await other.m.changePassword(alice.password, 'new password');
  await assert.rejects(unlockAgain(server, alice, locked, alice.password), { code: 'unauthenticated' });
});
