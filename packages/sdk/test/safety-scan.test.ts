/** A scanned safety-number code compared with the number shown: the rule the "Scan code" button applies. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { compareScannedSafetyNumber, safetyNumber } from '../src/index.js';

function publicKey(): string {
  const jwk = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey.export({ format: 'jwk' });
  return Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x!, 'base64url'), Buffer.from(jwk.y!, 'base64url')]).toString('base64url');
}

test('the other side’s code (the same 60 digits, as the QR code holds them) matches', async () => {
  const [a, b] = [publicKey(), publicKey()];
  const mine = await safetyNumber('alice', a, 'bob', b);
  const theirs = await safetyNumber('bob', b, 'alice', a);
  assert.equal(compareScannedSafetyNumber(theirs.replace(/\s+/g, ''), mine), 'match');
  assert.equal(compareScannedSafetyNumber(` ${theirs}\n`, mine), 'match', 'whitespace from a scanner is ignored');
});

test('a code made with another key does not match', async () => {
  const [a, b, mallory] = [publicKey(), publicKey(), publicKey()];
  const mine = await safetyNumber('alice', a, 'bob', b);
  const substituted = await safetyNumber('bob', mallory, 'alice', a);
  assert.equal(compareScannedSafetyNumber(substituted.replace(/\s+/g, ''), mine), 'mismatch');
});

test('a code that is not 60 digits is no safety number, never a match', async () => {
  const mine = await safetyNumber('alice', publicKey(), 'bob', publicKey());
  const digits = mine.replace(/\s+/g, '');
  for (const text of ['', 'https://example.com/', digits.slice(0, 59), `${digits}0`, `${digits.slice(0, 59)}x`]) {
    assert.equal(compareScannedSafetyNumber(text, mine), 'not-a-safety-number', JSON.stringify(text));
  }
});
