/** Two SDK accounts against a real server: DMs, own-device copies, forged senders, password change, clock correction. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { makeUlid } from '@svc/protocol';
import { argon2Js, openAtRest, randomBytes, sealAtRest, type DecryptedMessage } from '../src/index.js';
import { Inbox, client, loginDevice, nick, register, startServer, type TestServer } from './server.js';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

const ok = (r: DecryptedMessage): Extract<DecryptedMessage, { ok: true }> => {
  assert.equal(r.ok, true, JSON.stringify(r));
  return r;
};

test("DMs both ways decrypt, and the sender's other device decrypts its own copy", async () => {
  const alice = await register(server);
  const bob = await register(server);
  const alice2 = await loginDevice(server, alice.m.nick, alice.password, `dev-${alice.m.nick}-2`);
  const bobIn = new Inbox(bob).start();
  const alice2In = new Inbox(alice2).start();
  const aliceIn = new Inbox(alice).start();
  try {
    await Promise.all([bobIn.ready(), alice2In.ready(), aliceIn.ready()]);
    const sent = await alice.m.sendDm(bob.m.nick, 'hi bob ✓');
    await bobIn.count(1);
    const got = ok(await bob.m.decryptEnvelope(bobIn.envelopes[0]!));
    assert.deepEqual([got.id, got.from, got.chat, got.body, got.ts], [sent.id, alice.m.nick, `dm:${alice.m.nick}`, 'hi bob ✓', sent.ts]);
    assert.equal(got.sentAt, sent.sentAt);

    await alice2In.count(1);
    const own = ok(await alice2.m.decryptEnvelope(alice2In.envelopes[0]!));
    assert.deepEqual([own.from, own.chat, own.body], [alice.m.nick, `dm:${bob.m.nick}`, 'hi bob ✓']);

    await bob.m.sendDm(alice.m.nick, 'hi alice');
    await aliceIn.count(1);
    const back = ok(await alice.m.decryptEnvelope(aliceIn.envelopes[0]!));
    assert.deepEqual([back.from, back.chat, back.body], [bob.m.nick, `dm:${bob.m.nick}`, 'hi alice']);
    // The sending device is never a target; the other gets both directions.
    await alice2In.count(2);
    assert.equal(ok(await alice2.m.decryptEnvelope(alice2In.envelopes[1]!)).body, 'hi alice');
    assert.equal(aliceIn.envelopes.length, 1);
  } finally {
    await Promise.all([bobIn.close(), alice2In.close(), aliceIn.close()]);
  }
});

test('an envelope with a forged from fails to decrypt and is shown as an error, not a message', async () => {
  const alice = await register(server);
  const bob = await register(server);
  const carol = await register(server);
  const bobIn = new Inbox(bob).start();
  try {
    await bobIn.ready();
    await alice.m.sendDm(bob.m.nick, 'from alice');
    await bobIn.count(1);
    const env = bobIn.envelopes[0]!;
    const forged = await bob.m.decryptEnvelope({ ...env, from: carol.m.nick });
    assert.deepEqual(forged, { ok: false, id: env.id, ts: env.ts, from: carol.m.nick, chat: `dm:${carol.m.nick}`, reason: 'decrypt_failed' });
    const tampered = await bob.m.decryptEnvelope({ ...env, ct: env.ct.slice(0, -2) + (env.ct.endsWith('AA') ? 'AB' : 'AA') });
    assert.equal(tampered.ok, false);
    const gone = await bob.m.decryptEnvelope({ ...env, from: 'nobody_here_zz' });
    assert.deepEqual([gone.ok, !gone.ok && gone.reason], [false, 'unknown_sender']);
    assert.equal(ok(await bob.m.decryptEnvelope(env)).body, 'from alice');
  } finally {
    await bobIn.close();
  }
});

test('keyCheck sees every peer key before use and can refuse sending', async () => {
  const bob = await register(server);
  const seen: string[] = [];
  const alice = await register(server, nick(), undefined, {
    keyCheck: (n, pk, purpose) => {
      seen.push(`${n}:${purpose}`);
      assert.equal(pk.length, 87);
      if (purpose === 'send') throw new Error('key changed, waiting for consent');
    },
  });
  await assert.rejects(alice.m.sendDm(bob.m.nick, 'x'), { code: 'untrusted_key' });
  assert.deepEqual(seen, [`${bob.m.nick}:send`]);
  assert.equal(await alice.m.safetyNumber(bob.m.nick), await bob.m.safetyNumber(alice.m.nick));
});

test('password change: new password logs in, the old one does not, the identity and the history key stay', async () => {
  const alice = await register(server);
  const bob = await register(server);
  const record = await sealAtRest(alice.m.historyKey, { body: 'kept' }, 'ctx');
  const publicKey = alice.m.publicKey;
  await alice.m.changePassword(alice.password, 'new password ✓', { kdf: { m: 19456, t: 2, p: 1 } });
  // The calling session stays.
  await alice.m.sendDm(bob.m.nick, 'still here');
  const fresh = client(server);
  await fresh.m.login({ nick: alice.m.nick, password: 'new password ✓' });
  assert.equal(fresh.m.publicKey, publicKey);
  assert.deepEqual(await openAtRest(fresh.m.historyKey, record, 'ctx'), { body: 'kept' });
  const stale = client(server);
  await assert.rejects(stale.m.login({ nick: alice.m.nick, password: alice.password }), { code: 'invalid_credentials' });
  await assert.rejects(alice.m.changePassword('wrong', 'x'), { code: 'bad_identity' });
});

test('a wrong device clock is corrected from the Date header, so sends get 202 and not clock_skew', async () => {
  const skewed = () => Date.now() - 2 * 3600_000;
  const bob = await register(server);
  const alice = await register(server, nick(), undefined, { clock: skewed });
  const body = { to: { dm: bob.m.nick }, keyId: 'dm', iv: 'AAAAAAAAAAAAAAAA', ct: 'A'.repeat(43) };
  // The device's own clock gives a ULID two hours old: the service refuses it.
  await assert.rejects(alice.api.sendMessage({ id: makeUlid(skewed(), randomBytes), ...body }), { code: 'clock_skew' });
  // The SDK's ids use the corrected clock.
  const sent = await alice.m.sendDm(bob.m.nick, 'on time');
  assert.ok(Math.abs(sent.ts - sent.sentAt) < 5000, `sentAt ${sent.sentAt} vs ts ${sent.ts}`);
  assert.ok(Math.abs(alice.api.clock.offset - 2 * 3600_000) < 3000);
});

test('account deletion needs the password, then the nick is gone', async () => {
  const alice = await register(server);
  const bob = await register(server);
  await assert.rejects(alice.m.deleteAccount('wrong'), { code: 'invalid_credentials' });
  const name = alice.m.nick;
  await alice.m.deleteAccount(alice.password);
  assert.equal(alice.m.loggedIn, false);
  await assert.rejects(bob.m.sendDm(name, 'x'), { code: 'unknown_user' });
});

test("an account made with the default KDF cost (m=65536, t=3, p=1) on hash-wasm logs in on another device with the SDK's default Argon2id (@noble/hashes)", async () => {
  const name = nick();
  const a = client(server);
  await a.m.register({ nick: name, password: 'default cost' });
  assert.deepEqual([a.m.kdf.m, a.m.kdf.t, a.m.kdf.p], [65536, 3, 1]);
  const stages: string[] = [];
  let last = -1;
  const b = client(server, { argon2: argon2Js });
  await b.m.login({ nick: name, password: 'default cost' }, (s, f) => {
    if (stages.at(-1) !== s) stages.push(s);
    if (f !== undefined) {
      assert.ok(f >= last, 'the fraction only rises');
      last = f;
    }
  });
  assert.equal(b.m.publicKey, a.m.publicKey);
  assert.deepEqual(stages, ['fetching_params', 'deriving_key', 'contacting_service', 'opening_identity', 'done']);
  assert.equal(last, 1);
});
