/** A hostile service cannot downgrade (or blow up) the KDF: parameters outside KDF_BOUNDS are refused before any work. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkKdf, deriveMaster, newKdf, KDF_BOUNDS, type Kdf } from '../src/index.js';

const good: Kdf = { alg: 'argon2id', salt: 'AAAAAAAAAAAAAAAAAAAAAA', m: 65536, t: 3, p: 1 };

test('newKdf gives the defaults m=65536 t=3 p=1 with a fresh 16-byte salt', () => {
  const a = newKdf();
  const b = newKdf();
  assert.deepEqual({ ...a, salt: '' }, { alg: 'argon2id', salt: '', m: 65536, t: 3, p: 1 });
  assert.equal(Buffer.from(a.salt, 'base64url').length, 16);
  assert.notEqual(a.salt, b.salt);
});

test('parameters at the bounds are accepted, only the known fields kept', () => {
  for (const k of ['m', 't', 'p'] as const) {
    checkKdf({ ...good, [k]: KDF_BOUNDS[k].min });
    checkKdf({ ...good, [k]: KDF_BOUNDS[k].max });
  }
  assert.deepEqual(checkKdf({ ...good, extra: 1 }), good);
});

test('each out-of-bounds m, t, p, alg or salt is refused with kdf_refused', async () => {
  const bad: [string, unknown][] = [
    ['m', { ...good, m: KDF_BOUNDS.m.min - 1 }],
    ['m', { ...good, m: KDF_BOUNDS.m.max + 1 }],
    ['m', { ...good, m: 65536.5 }],
    ['m', { ...good, m: '65536' }],
    ['t', { ...good, t: KDF_BOUNDS.t.min - 1 }],
    ['t', { ...good, t: KDF_BOUNDS.t.max + 1 }],
    ['p', { ...good, p: 0 }],
    ['p', { ...good, p: KDF_BOUNDS.p.max + 1 }],
    ['alg', { ...good, alg: 'argon2i' }],
    ['alg', { ...good, alg: undefined }],
    ['salt', { ...good, salt: 'AAAA' }],
    ['salt', { ...good, salt: 'AAAAAAAAAAAAAAAAAAAAAAAA' }],
    ['salt', { ...good, salt: 'AAAAAAAAAAAAAAAAAAAA+/' }],
    ['kdf', null],
    ['kdf', [good]],
  ];
  for (const [field, kdf] of bad) {
    assert.throws(
      () => checkKdf(kdf),
      (e: { code?: string; field?: string }) => e.code === 'kdf_refused' && e.field === field,
      JSON.stringify(kdf),
    );
    await assert.rejects(deriveMaster('pw', kdf as Kdf), { code: 'kdf_refused' });
  }
});
