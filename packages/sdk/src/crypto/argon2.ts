/**
 * Argon2id (RFC 9106, version 0x13) and BLAKE2b (RFC 7693): thin adapters over `@noble/hashes`,
 * an audited plain-JavaScript library. Plain JavaScript because WebCrypto has no memory-hard KDF
 * and the service's Content-Security-Policy (no 'wasm-unsafe-eval') forbids WebAssembly in the web
 * app. An audited library rather than code of the SDK's own (timings in docs/BENCHMARKS.md).
 * Synchronous, seconds at the defaults: a browser app runs it in a Worker (kdf.ts lets the
 * caller supply where it runs). Pinned by RFC 9106's and RFC 7693's vectors, the reference
 * implementation's vectors and cross-checks against hash-wasm and node:crypto (test/argon2.test.ts,
 * test/crypto-vectors.test.ts).
 *
 * noble zeroes its memory array, H0 and the other working buffers when it returns or throws.
 */
import { argon2id as nobleArgon2id } from '@noble/hashes/argon2.js';
import { blake2b as nobleBlake2b } from '@noble/hashes/blake2.js';

export interface Argon2Params {
  password: Uint8Array;
  salt: Uint8Array;
  /** memory in KiB */
  m: number;
  /** passes */
  t: number;
  /** lanes */
  p: number;
  /** output bytes */
  length: number;
  secret?: Uint8Array;
  ad?: Uint8Array;
  /** Called with the fraction done (0..1), about a hundred times in all and once with 1 at the end. */
  onProgress?: (fraction: number) => void;
}

const whole = (n: number, min: number, max: number) => Number.isInteger(n) && n >= min && n <= max;

export function argon2id(o: Argon2Params): Uint8Array {
  const { p, t, m, length } = o;
  // Checked here too so a bad call is a RangeError whatever the library's own messages are.
  if (!whole(p, 1, 0xffffff) || !whole(t, 1, 0xffffffff) || !whole(length, 4, 0xffffffff) || !whole(m, 8 * p, 0xffffffff)) {
    throw new RangeError('Argon2id parameters out of range');
  }
  const onProgress = o.onProgress;
  // noble reports up to 10,000 times; a worker posts each one, so pass on only whole percents.
  let last = -1;
  const progress =
    onProgress &&
    ((f: number) => {
      const pct = Math.floor(f * 100);
      if (pct === last) return;
      last = pct;
      onProgress(f);
    });
  // The memory actually allocated (m rounded down to 4p blocks of 1 KiB) is the limit: the bounds
  // (KDF_BOUNDS) already decide how much a derivation may take, noble's 1 GiB default must not.
  const maxmem = 4 * p * Math.floor(m / (4 * p)) * 1024;
  const out = nobleArgon2id(o.password, o.salt, {
    m,
    t,
    p,
    dkLen: length,
    version: 0x13,
    maxmem,
    ...(o.secret?.length ? { key: o.secret } : {}),
    ...(o.ad?.length ? { personalization: o.ad } : {}),
    ...(progress ? { onProgress: progress } : {}),
  });
  if (onProgress && last < 100) onProgress(1);
  return out;
}

/** BLAKE2b (unkeyed) with an outLen-byte digest (1..64) over the concatenation of the parts. */
export function blake2b(outLen: number, ...parts: Uint8Array[]): Uint8Array {
  if (!whole(outLen, 1, 64)) throw new RangeError('BLAKE2b digest length must be 1..64');
  const h = nobleBlake2b.create({ dkLen: outLen });
  for (const part of parts) h.update(part);
  return h.digest();
}
