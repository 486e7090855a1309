/**
 * svc derives keys with Node's native Argon2id where there is one: it must give the same bytes as
 * the SDK's, or an account made in the browser would not open from the command line.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { argon2Js, utf8 } from '@svc/sdk';
import { hasNativeArgon2, nodeArgon2 } from '../src/argon2.js';

test("Node's Argon2id gives the SDK's bytes for the same password, salt and parameters", async () => {
  assert.ok(hasNativeArgon2, 'Node 24 has crypto.argon2');
  for (const [password, m, t, p] of [
    ['correct horse', 64, 2, 1],
    ['pässwörd (NFC)', 256, 3, 2],
    ['', 19456, 2, 1],
  ] as const) {
    const input = { password: utf8(password), salt: utf8('sixteen byte slt'), m, t, p, length: 32 };
    assert.deepEqual(await nodeArgon2(input), await argon2Js(input), `m=${m} t=${t} p=${p}`);
  }
});
