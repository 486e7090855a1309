/**
 * BLAKE2b (RFC 7693), unkeyed, any digest length 1..64: the hash inside Argon2id (argon2.ts).
 * WebCrypto has no BLAKE2b, so it is written out here. 64-bit words are kept as (low, high) pairs
 * of 32-bit integers so it runs in plain JavaScript. Checked against node:crypto's blake2b512 and
 * hash-wasm's BLAKE2b for other digest lengths (test/argon2.test.ts).
 */

const IV = new Uint32Array([
  0xf3bcc908, 0x6a09e667, 0x84caa73b, 0xbb67ae85, 0xfe94f82b, 0x3c6ef372, 0x5f1d36f1, 0xa54ff53a,
  0xade682d1, 0x510e527f, 0x2b3e6c1f, 0x9b05688c, 0xfb41bd6b, 0x1f83d9ab, 0x137e2179, 0x5be0cd19,
]);

const SIGMA = [
  [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
  [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
  [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4],
  [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
  [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13],
  [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
  [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11],
  [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
  [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5],
  [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0],
];

const v = new Uint32Array(32);
const m = new Uint32Array(32);

/** v[a] += v[b] + y (64-bit, word indices; x/y as lo,hi). */
function add3(a: number, b: number, yl: number, yh: number): void {
  const lo = v[2 * a]! + v[2 * b]! + yl;
  v[2 * a + 1] = v[2 * a + 1]! + v[2 * b + 1]! + yh + Math.floor(lo / 0x100000000);
  v[2 * a] = lo;
}

function xorRotr(d: number, a: number, r: number): void {
  const xl = v[2 * d]! ^ v[2 * a]!;
  const xh = v[2 * d + 1]! ^ v[2 * a + 1]!;
  if (r === 32) {
    v[2 * d] = xh;
    v[2 * d + 1] = xl;
  } else if (r < 32) {
    v[2 * d] = (xl >>> r) | (xh << (32 - r));
    v[2 * d + 1] = (xh >>> r) | (xl << (32 - r));
  } else {
    const s = r - 32;
    v[2 * d] = (xh >>> s) | (xl << (32 - s));
    v[2 * d + 1] = (xl >>> s) | (xh << (32 - s));
  }
}

function g(a: number, b: number, c: number, d: number, x: number, y: number): void {
  add3(a, b, m[2 * x]!, m[2 * x + 1]!);
  xorRotr(d, a, 32);
  add3(c, d, 0, 0);
  xorRotr(b, c, 24);
  add3(a, b, m[2 * y]!, m[2 * y + 1]!);
  xorRotr(d, a, 16);
  add3(c, d, 0, 0);
  xorRotr(b, c, 63);
}

function compress(h: Uint32Array, block: Uint8Array, t: number, last: boolean): void {
  for (let i = 0; i < 16; i++) {
    v[i] = h[i]!;
    v[i + 16] = IV[i]!;
  }
  v[24] = (v[24]! ^ t) >>> 0;
  v[25] = (v[25]! ^ Math.floor(t / 0x100000000)) >>> 0;
  if (last) {
    v[28] = ~v[28]!;
    v[29] = ~v[29]!;
  }
  for (let i = 0; i < 32; i++) {
    m[i] = block[4 * i]! | (block[4 * i + 1]! << 8) | (block[4 * i + 2]! << 16) | (block[4 * i + 3]! << 24);
  }
  for (let r = 0; r < 12; r++) {
    const s = SIGMA[r % 10]!;
    g(0, 4, 8, 12, s[0]!, s[1]!);
    g(1, 5, 9, 13, s[2]!, s[3]!);
    g(2, 6, 10, 14, s[4]!, s[5]!);
    g(3, 7, 11, 15, s[6]!, s[7]!);
    g(0, 5, 10, 15, s[8]!, s[9]!);
    g(1, 6, 11, 12, s[10]!, s[11]!);
    g(2, 7, 8, 13, s[12]!, s[13]!);
    g(3, 4, 9, 14, s[14]!, s[15]!);
  }
  for (let i = 0; i < 16; i++) h[i] = h[i]! ^ v[i]! ^ v[i + 16]!;
}

/** BLAKE2b with an outLen-byte digest over the concatenation of the parts. */
export function blake2b(outLen: number, ...parts: Uint8Array[]): Uint8Array {
  if (outLen < 1 || outLen > 64) throw new RangeError('BLAKE2b digest length must be 1..64');
  const h = new Uint32Array(IV);
  h[0] = h[0]! ^ (0x01010000 | outLen);
  const total = parts.reduce((n, p) => n + p.length, 0);
  const input = new Uint8Array(total);
  let off = 0;
  for (const p of parts) {
    input.set(p, off);
    off += p.length;
  }
  const block = new Uint8Array(128);
  let pos = 0;
  // Every full block but the last one is compressed as not-last; the final (possibly empty or partial) block is padded.
  while (total - pos > 128) {
    block.set(input.subarray(pos, pos + 128));
    pos += 128;
    compress(h, block, pos, false);
  }
  block.fill(0);
  block.set(input.subarray(pos));
  compress(h, block, total, true);
  const out = new Uint8Array(outLen);
  for (let i = 0; i < outLen; i++) out[i] = h[i >> 2]! >>> (8 * (i & 3));
  return out;
}
