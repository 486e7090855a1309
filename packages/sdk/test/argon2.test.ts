/**
 * The SDK's BLAKE2b and Argon2id (adapters over @noble/hashes) against independent implementations:
 * RFC 9106's Argon2id vector (secret and associated data included), RFC 7693's BLAKE2b vector,
 * node:crypto's BLAKE2b-512, and hash-wasm (WebAssembly) over many random parameter sets. These
 * keep the library honest across upgrades. The reference implementation's vectors are in
 * crypto-vectors.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { argon2id as wasmArgon2id, blake2b as wasmBlake2b } from 'hash-wasm';
import { argon2id, blake2b } from '../src/index.js';
import { hex } from './fixtures.js';

test('BLAKE2b-512 matches node:crypto at and around block boundaries', () => {
  for (const n of [0, 1, 3, 64, 127, 128, 129, 255, 256, 257, 1024, 1031]) {
    const data = Uint8Array.from({ length: n }, (_, i) => (i * 7 + n) & 0xff);
    assert.equal(hex(blake2b(64, data)), createHash('blake2b512').update(data).digest('hex'), `${n} bytes`);
  }
  // RFC 7693 appendix A.
  assert.equal(
    hex(blake2b(64, new TextEncoder().encode('abc'))),
    'ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d17d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923',
  );
});

test('BLAKE2b of every digest length and split input matches hash-wasm', async () => {
  await fc.assert(
    fc.asyncProperty(fc.integer({ min: 1, max: 64 }), fc.uint8Array({ maxLength: 400 }), fc.nat(), async (len, data, cut) => {
      const at = data.length === 0 ? 0 : cut % data.length;
      const ours = hex(blake2b(len, data.subarray(0, at), data.subarray(at)));
      assert.equal(ours, await wasmBlake2b(data, len * 8));
    }),
    { numRuns: 200 },
  );
});

test('Argon2id matches the RFC 9106 vector (section 5.3: secret and associated data)', () => {
  const tag = argon2id({
    password: new Uint8Array(32).fill(1),
    salt: new Uint8Array(16).fill(2),
    secret: new Uint8Array(8).fill(3),
    ad: new Uint8Array(12).fill(4),
    m: 32,
    t: 3,
    p: 4,
    length: 32,
  });
  assert.equal(hex(tag), '0d640df58d78766c08c037a34a8b53c9d01ef0452d75b65eb52520e96b01e659');
});

test('Argon2id matches hash-wasm over random passwords, salts, memory, passes, lanes and output lengths', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.record({
        // hash-wasm refuses an empty password (RFC 9106 allows it; the SDK never derives from one).
        password: fc.uint8Array({ minLength: 1, maxLength: 80 }),
        salt: fc.uint8Array({ minLength: 8, maxLength: 40 }),
        p: fc.integer({ min: 1, max: 4 }),
        extra: fc.integer({ min: 0, max: 600 }),
        t: fc.integer({ min: 1, max: 4 }),
        // Lengths over 64 bytes take H''s long form.
        length: fc.constantFrom(4, 16, 31, 32, 64, 65, 96, 127, 200),
      }),
      async ({ password, salt, p, extra, t, length }) => {
        // m need not be a multiple of 4p (it is rounded down), but must be at least 8p.
        const m = 8 * p + extra;
        const ours = argon2id({ password, salt, m, t, p, length });
        const theirs = await wasmArgon2id({ password, salt, memorySize: m, iterations: t, parallelism: p, hashLength: length, outputType: 'binary' });
        assert.equal(hex(ours), hex(theirs), JSON.stringify({ m, t, p, length }));
      },
    ),
    { numRuns: 60 },
  );
});

test('Argon2id matches hash-wasm at the KDF lower bound with four lanes, where the addressing crosses segments many times', async () => {
  const input = { password: new TextEncoder().encode('pw'), salt: new Uint8Array(16).fill(9), m: 19456, t: 2, p: 4, length: 32 };
  const theirs = await wasmArgon2id({
    ...input,
    memorySize: input.m,
    iterations: input.t,
    parallelism: input.p,
    hashLength: 32,
    outputType: 'binary',
  });
  assert.equal(hex(argon2id(input)), hex(theirs));
});

test('Argon2id refuses parameters outside RFC 9106 instead of computing something else', () => {
  const base = { password: new Uint8Array(1), salt: new Uint8Array(8), m: 64, t: 1, p: 1, length: 32 };
  for (const bad of [{ m: 7 }, { p: 2, m: 15 }, { p: 0 }, { t: 0 }, { length: 3 }, { m: 64.5 }, { t: Number.NaN }]) {
    assert.throws(() => argon2id({ ...base, ...bad }), RangeError, JSON.stringify(bad));
  }
});
