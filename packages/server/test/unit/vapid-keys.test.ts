/**
 * VAPID keys (push/vapid-keys.ts, docs/PUSH.md "Configuring VAPID"): the private key is always the
 * 32-byte scalar, also when Node's ECDH hands it out without its leading zero byte (about one key
 * in 200), which `web-push` would refuse at every push.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createECDH } from 'node:crypto';
import { decodeB64url, encodeB64url } from '@svc/protocol';
import { fullLengthVapidPrivateKey, newVapidKeys } from '../../src/push/vapid-keys.js';
import { shortScalarPair } from '../push/short-vapid-key.js';

test('every generated VAPID key pair has a 32-byte private key and a 65-byte public key (2,000 pairs: about ten would start with a zero byte)', () => {
  for (let i = 0; i < 2000; i++) {
    const k = newVapidKeys();
    assert.equal(decodeB64url(k.privateKey)?.length, 32);
    assert.equal(decodeB64url(k.publicKey)?.length, 65);
  }
});

test('a private key without its leading zero byte is padded to the same scalar, whose public key is unchanged', () => {
  const { publicKey, privateKey } = shortScalarPair();
  const padded = decodeB64url(fullLengthVapidPrivateKey(encodeB64url(privateKey)))!;
  assert.equal(padded.length, 32);
  assert.equal(padded[0], 0);
  const again = createECDH('prime256v1');
  again.setPrivateKey(padded);
  assert.deepEqual(again.getPublicKey(), publicKey);
});

test('a full-length or malformed private key is returned as given', () => {
  const full = newVapidKeys().privateKey;
  assert.equal(fullLengthVapidPrivateKey(full), full);
  for (const odd of ['', 'not base64url!', encodeB64url(new Uint8Array(33))]) assert.equal(fullLengthVapidPrivateKey(odd), odd);
});
