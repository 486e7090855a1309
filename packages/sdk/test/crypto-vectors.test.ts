/**
 * Every crypto step reproduces the vectors computed by an independent implementation
 * (node:crypto for HKDF/ECDH/AES-GCM/SHA, the reference Argon2 for Argon2id), and opens them.
 * Argon2id is checked on the SDK's default backend (@noble/hashes, plain JavaScript) and on
 * hash-wasm, the backend the other Node tests use for speed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  argon2id,
  argon2Js,
  deriveMaster,
  deriveAccountKeyBytes,
  deriveAccountKeys,
  importAesKey,
  openIdentity,
  sealIdentity,
  pairKeyBytes,
  pairKey,
  pairSalt,
  encodePlaintext,
  decodePlaintext,
  encryptDm,
  decryptDm,
  wrapRoomKey,
  unwrapRoomKey,
  encryptRoomMessage,
  decryptRoomMessage,
  importRoomKey,
  historyKeyBytes,
  deriveHistoryKey,
  sealAtRest,
  openAtRest,
  indexKeyBytes,
  deriveIndexKey,
  atRestTag,
  safetyNumber,
  type Kdf,
} from '../src/index.js';
import { V, hex, unhex, fixtureIdentity, fromB64 } from './fixtures.js';
import { hashWasmArgon2 } from './hash-wasm.js';

test('Argon2id matches the reference implementation known-answer vector (SDK and hash-wasm)', async () => {
  const r = V.argon2id.reference;
  const input = { password: unhex(r.password), salt: unhex(r.salt), m: r.m, t: r.t, p: r.p, length: 32 };
  assert.equal(hex(argon2id(input)), r.tag);
  assert.equal(hex(await hashWasmArgon2(input)), r.tag);
});

test('master secret = Argon2id over the NFC password matches the reference implementation (default parameters included)', async () => {
  for (const d of V.argon2id.derive) {
    const kdf: Kdf = { alg: 'argon2id', salt: d.salt, m: d.m, t: d.t, p: d.p };
    // No backend given: the SDK's default (@noble/hashes).
    assert.equal(hex(await deriveMaster(d.password, kdf)), d.master, `${d.m}/${d.t}/${d.p}`);
    assert.equal(hex(await deriveMaster(d.password, kdf, { argon2: hashWasmArgon2 })), d.master, `hash-wasm ${d.m}/${d.t}/${d.p}`);
    if (d.passwordIsNfd) {
      // The same password typed in composed form gives the same master secret.
      assert.notEqual(d.password, d.password.normalize('NFC'));
      assert.equal(hex(await deriveMaster(d.password.normalize('NFC'), kdf, { argon2: hashWasmArgon2 })), d.master);
    }
  }
});

test('deriveMaster reports the deriving_key stage with a rising fraction that ends at 1', async () => {
  const d = V.argon2id.derive[0];
  const seen: [string, number | undefined][] = [];
  const master = await deriveMaster(
    d.password,
    { alg: 'argon2id', salt: d.salt, m: d.m, t: d.t, p: d.p },
    { argon2: argon2Js, onProgress: (s, f) => seen.push([s, f]) },
  );
  assert.equal(hex(master), d.master);
  assert.ok(seen.every(([s]) => s === 'deriving_key'));
  const fractions = seen.map(([, f]) => f!);
  assert.equal(fractions[0], 0);
  assert.equal(fractions.at(-1), 1);
  assert.ok(fractions.length >= 20 && fractions.length <= 150, `${fractions.length} reports`);
  assert.ok(
    fractions.every((f, i) => i === 0 || f > fractions[i - 1]!),
    'strictly rising',
  );
});

test('authKey and encKey are HKDF-SHA256 of the master with infos svc/auth/v1 and svc/enc/v1', async () => {
  const k = await deriveAccountKeyBytes(unhex(V.keys.master));
  assert.equal(Buffer.from(k.auth).toString('base64url'), V.keys.authKey);
  assert.equal(hex(k.enc), V.keys.encKey);
  const keys = await deriveAccountKeys(unhex(V.keys.master));
  assert.equal(keys.authKey, V.keys.authKey);
  assert.equal(keys.encKey.extractable, false);
  assert.deepEqual(keys.encKey.usages.sort(), ['decrypt', 'encrypt']);
});

test('identity blob: opens the fixture sealed with AAD svc/identity/v1|nick and seals to the same bytes', async () => {
  const encKey = await importAesKey(unhex(V.identity.encKey));
  const id = await openIdentity(encKey, V.identity.encryptedKey, 'alice', V.parties.alice.publicKey);
  assert.equal(id.publicKey, V.parties.alice.publicKey);
  assert.equal(id.privateKey.extractable, false);
  const again = await sealIdentity(encKey, { pkcs8: fromB64(V.parties.alice.pkcs8) }, 'alice', new Uint8Array(12).fill(1));
  assert.deepEqual(again, V.identity.encryptedKey);
});

test('identity blob is refused under another nick, another public key or another key', async () => {
  const encKey = await importAesKey(unhex(V.identity.encKey));
  await assert.rejects(openIdentity(encKey, V.identity.encryptedKey, 'mallory', V.parties.alice.publicKey), { code: 'bad_identity' });
  await assert.rejects(openIdentity(encKey, V.identity.encryptedKey, 'alice', V.parties.bob.publicKey), { code: 'bad_identity' });
  const other = await importAesKey(new Uint8Array(32));
  await assert.rejects(openIdentity(other, V.identity.encryptedKey, 'alice', V.parties.alice.publicKey), { code: 'bad_identity' });
});

test('pair key = HKDF(ECDH, salt SHA-256(sorted nicks joined by newline), svc/pair/v1), the same from both sides, and (A, A) for own copies', async () => {
  const alice = await fixtureIdentity('alice');
  const bob = await fixtureIdentity('bob');
  const carol = await fixtureIdentity('carol');
  assert.equal(hex(await pairSalt('bob', 'alice')), V.pair.saltAliceBob);
  assert.equal(hex(await pairKeyBytes(alice.privateKey, 'alice', 'bob', bob.publicKey)), V.pair.aliceBob);
  assert.equal(hex(await pairKeyBytes(bob.privateKey, 'bob', 'alice', alice.publicKey)), V.pair.aliceBob);
  assert.equal(hex(await pairKeyBytes(alice.privateKey, 'alice', 'alice', alice.publicKey)), V.pair.aliceAlice);
  assert.equal(hex(await pairKeyBytes(carol.privateKey, 'carol', 'alice', alice.publicKey)), V.pair.aliceCarol);
});

test('message plaintext is the JSON form zero-padded to a multiple of 256 bytes', () => {
  const p = encodePlaintext({ type: 'text', body: V.dm.body, sentAt: V.dm.sentAt });
  assert.equal(hex(p), V.dm.padded);
  assert.deepEqual(decodePlaintext(p), { v: 1, type: 'text', body: V.dm.body, sentAt: V.dm.sentAt });
  assert.equal(encodePlaintext({ type: 'text', body: '', sentAt: 0 }).length, 256);
  assert.equal(encodePlaintext({ type: 'text', body: 'y'.repeat(300), sentAt: 0 }).length, 512);
  // A body with U+0000 stays unambiguous: JSON escapes it.
  assert.deepEqual(decodePlaintext(encodePlaintext({ type: 'text', body: 'a\u0000b', sentAt: 1 })), {
    v: 1,
    type: 'text',
    body: 'a\u0000b',
    sentAt: 1,
  });
  assert.throws(() => encodePlaintext({ type: 'text', body: 'z'.repeat(30000), sentAt: 0 }), { code: 'too_long' });
  const bad = new Uint8Array(p);
  bad[bad.length - 1] = 1;
  assert.throws(() => decodePlaintext(bad));
  assert.throws(() => decodePlaintext(p.subarray(0, 255)));
});

test('DM ciphertext under pair key with AAD svc/msg/v1|id|from|dm:recipient|dm matches and decrypts on both sides', async () => {
  const alice = await fixtureIdentity('alice');
  const bob = await fixtureIdentity('bob');
  const kA = await pairKey(alice.privateKey, 'alice', 'bob', bob.publicKey);
  const s = await encryptDm(kA, { id: V.dm.id, from: 'alice', to: 'bob' }, { type: 'text', body: V.dm.body, sentAt: V.dm.sentAt }, unhex(V.dm.ivHex));
  assert.deepEqual(s, { iv: V.dm.iv, ct: V.dm.ct });
  const env = { id: V.dm.id, from: 'alice', to: { dm: 'bob' }, keyId: 'dm', iv: V.dm.iv, ct: V.dm.ct };
  const kB = await pairKey(bob.privateKey, 'bob', 'alice', alice.publicKey);
  assert.deepEqual(await decryptDm(kB, env), { v: 1, type: 'text', body: V.dm.body, sentAt: V.dm.sentAt });
  // Any bound field changed: the tag fails.
  await assert.rejects(decryptDm(kB, { ...env, from: 'carol' }));
  await assert.rejects(decryptDm(kB, { ...env, id: V.room.message.id }));
  await assert.rejects(decryptDm(kB, { ...env, to: { dm: 'carol' } }));
});

test('room key wrap with AAD svc/roomkey/v1|room|keyId|member matches, unwraps, and decrypts the room message fixture', async () => {
  const alice = await fixtureIdentity('alice');
  const carol = await fixtureIdentity('carol');
  const r = V.room;
  const kCA = await pairKey(carol.privateKey, 'carol', 'alice', alice.publicKey);
  const w = await wrapRoomKey(kCA, r.roomId, r.keyId, 'alice', unhex(r.key), unhex(r.wrapForAlice.ivHex));
  assert.deepEqual(w, { to: 'alice', iv: r.wrapForAlice.iv, ct: r.wrapForAlice.ct });
  const kAC = await pairKey(alice.privateKey, 'alice', 'carol', carol.publicKey);
  const roomKey = await unwrapRoomKey(kAC, r.roomId, r.keyId, 'alice', r.wrapForAlice);
  assert.equal(roomKey.extractable, false);
  await assert.rejects(unwrapRoomKey(kAC, r.roomId, r.keyId, 'bob', r.wrapForAlice));
  const m = r.message;
  const env = { id: m.id, from: m.from, to: { room: r.roomId }, keyId: r.keyId, iv: m.iv, ct: m.ct };
  assert.deepEqual(await decryptRoomMessage(roomKey, env), { v: 1, type: 'text', body: m.body, sentAt: m.sentAt });
  const s = await encryptRoomMessage(
    await importRoomKey(unhex(r.key)),
    { id: m.id, from: m.from, roomId: r.roomId, keyId: r.keyId },
    { type: 'text', body: m.body, sentAt: m.sentAt },
    unhex(m.ivHex),
  );
  assert.deepEqual(s, { iv: m.iv, ct: m.ct });
  await assert.rejects(decryptRoomMessage(roomKey, { ...env, from: 'alice' }));
});

test('history key = HKDF(ECDH(identity, own public key), svc/history/v1); at-rest records match and open only in their context', async () => {
  const alice = await fixtureIdentity('alice');
  const h = V.history;
  assert.equal(hex(await historyKeyBytes(alice)), h.key);
  const key = await deriveHistoryKey(alice);
  assert.deepEqual(await sealAtRest(key, h.value, h.context, unhex(h.ivHex)), { iv: h.iv, ct: h.ct });
  assert.deepEqual(await openAtRest(key, { iv: h.iv, ct: h.ct }, h.context), h.value);
  await assert.rejects(openAtRest(key, { iv: h.iv, ct: h.ct }, 'other'));
  const bytes = new Uint8Array([1, 2, 3]);
  assert.deepEqual(await openAtRest(key, await sealAtRest(key, bytes)), bytes);
});

test('index key = HKDF(history key, svc/atrest-index/v1); a record tag is HMAC-SHA256 of its context, 16 bytes, the same every time', async () => {
  const alice = await fixtureIdentity('alice');
  const h = V.history;
  assert.equal(hex(await indexKeyBytes(alice)), h.indexKey);
  const key = await deriveIndexKey(alice);
  assert.equal(key.extractable, false);
  for (const [context, tag] of Object.entries(h.tags as Record<string, string>)) {
    assert.equal(await atRestTag(key, context), tag, context);
    assert.match(tag, /^[A-Za-z0-9_-]{22}$/);
  }
  // Another account's index key gives other tags for the same context.
  const bob = await deriveIndexKey(await fixtureIdentity('bob'));
  assert.notEqual(await atRestTag(bob, 'chat|dm:bob'), h.tags['chat|dm:bob']);
});

test('safety number matches the vector and is the same from both sides', async () => {
  const a = V.parties.alice.publicKey;
  const b = V.parties.bob.publicKey;
  const n = await safetyNumber('alice', a, 'bob', b);
  assert.equal(n, V.safety.aliceBob);
  assert.equal(await safetyNumber('bob', b, 'alice', a), n);
  assert.match(n, /^(\d{5} ){11}\d{5}$/);
});
