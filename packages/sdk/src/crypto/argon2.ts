/**
 * Argon2id (RFC 9106, version 0x13) in plain JavaScript: the SDK's own password hash.
 *
 * Why plain JavaScript: WebCrypto has no memory-hard KDF, and the service's Content-Security-Policy
 * (`default-src 'self'`, no 'wasm-unsafe-eval') forbids compiling WebAssembly, so a WebAssembly
 * Argon2 cannot run in the web app. This one runs wherever the SDK runs. It is synchronous and
 * takes seconds with the default parameters: a browser app runs it in a Worker (kdf.ts lets the
 * caller supply where it runs). Checked against RFC 9106's vector, the reference implementation's
 * vectors and hash-wasm (test/argon2.test.ts, test/crypto-vectors.test.ts).
 *
 * Memory is one Uint32Array of m KiB; each 64-bit word is a (low, high) pair of 32-bit integers.
 */
import { blake2b } from './blake2b.js';

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

const BLOCK_WORDS = 256; // 1024 bytes as 32-bit halves
const SYNC_POINTS = 4;
const TYPE_ID = 2;
const VERSION = 0x13;

function le32(n: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n, true);
  return b;
}

/** H' of RFC 9106 §3.3: the variable-length hash built from BLAKE2b. */
function hPrime(outLen: number, ...input: Uint8Array[]): Uint8Array {
  if (outLen <= 64) return blake2b(outLen, le32(outLen), ...input);
  const out = new Uint8Array(outLen);
  const r = Math.ceil(outLen / 32) - 2;
  let vi = blake2b(64, le32(outLen), ...input);
  out.set(vi.subarray(0, 32), 0);
  for (let i = 1; i < r; i++) {
    vi = blake2b(64, vi);
    out.set(vi.subarray(0, 32), i * 32);
  }
  out.set(blake2b(outLen - 32 * r, vi), 32 * r);
  return out;
}

/** The high 32 bits of the 64-bit product of two unsigned 32-bit integers, exactly. */
function mulHi(a: number, b: number): number {
  const al = a & 0xffff;
  const ah = a >>> 16;
  const bl = b & 0xffff;
  const bh = b >>> 16;
  const mid = al * bh + ah * bl;
  return ah * bh + Math.floor((mid * 0x10000 + al * bl) / 0x100000000);
}

/**
 * GB of RFC 9106 §3.6 on four 64-bit words of q (given as offsets of their low halves), with the
 * BlaMka step a = a + b + 2·lo(a)·lo(b). Locals instead of array traffic: this is the hot loop.
 * The high half of lo(a)·lo(b) is round((a·b − low half) / 2^32): the double product is off by at
 * most 2^12, far below the 2^31 that rounding tolerates, and the low half is exact from Math.imul.
 */
function gb(q: Uint32Array, a: number, b: number, c: number, d: number): void {
  let al = q[a]!, ah = q[a + 1]!, bl = q[b]!, bh = q[b + 1]!;
  let cl = q[c]!, ch = q[c + 1]!, dl = q[d]!, dh = q[d + 1]!;
  let pl: number, ph: number, lo: number, xl: number, xh: number;

  pl = Math.imul(al, bl) >>> 0; ph = Math.round((al * bl - pl) / 0x100000000);
  lo = al + bl + ((pl << 1) >>> 0);
  ah = (ah + bh + ((ph << 1) | (pl >>> 31)) + (lo > 0xffffffff ? (lo > 0x1ffffffff ? 2 : 1) : 0)) >>> 0; al = lo >>> 0;
  xl = dl ^ al; xh = dh ^ ah; dl = xh >>> 0; dh = xl >>> 0; // rotr 32

  pl = Math.imul(cl, dl) >>> 0; ph = Math.round((cl * dl - pl) / 0x100000000);
  lo = cl + dl + ((pl << 1) >>> 0);
  ch = (ch + dh + ((ph << 1) | (pl >>> 31)) + (lo > 0xffffffff ? (lo > 0x1ffffffff ? 2 : 1) : 0)) >>> 0; cl = lo >>> 0;
  xl = bl ^ cl; xh = bh ^ ch; bl = ((xl >>> 24) | (xh << 8)) >>> 0; bh = ((xh >>> 24) | (xl << 8)) >>> 0; // rotr 24

  pl = Math.imul(al, bl) >>> 0; ph = Math.round((al * bl - pl) / 0x100000000);
  lo = al + bl + ((pl << 1) >>> 0);
  ah = (ah + bh + ((ph << 1) | (pl >>> 31)) + (lo > 0xffffffff ? (lo > 0x1ffffffff ? 2 : 1) : 0)) >>> 0; al = lo >>> 0;
  xl = dl ^ al; xh = dh ^ ah; dl = ((xl >>> 16) | (xh << 16)) >>> 0; dh = ((xh >>> 16) | (xl << 16)) >>> 0; // rotr 16

  pl = Math.imul(cl, dl) >>> 0; ph = Math.round((cl * dl - pl) / 0x100000000);
  lo = cl + dl + ((pl << 1) >>> 0);
  ch = (ch + dh + ((ph << 1) | (pl >>> 31)) + (lo > 0xffffffff ? (lo > 0x1ffffffff ? 2 : 1) : 0)) >>> 0; cl = lo >>> 0;
  xl = bl ^ cl; xh = bh ^ ch; bl = ((xl << 1) | (xh >>> 31)) >>> 0; bh = ((xh << 1) | (xl >>> 31)) >>> 0; // rotr 63

  q[a] = al; q[a + 1] = ah; q[b] = bl; q[b + 1] = bh;
  q[c] = cl; q[c + 1] = ch; q[d] = dl; q[d + 1] = dh;
}

/**
 * Where P reads its sixteen 64-bit words, as offsets of low halves in a block: runs 0..7 are the
 * rows (16 consecutive words), runs 8..15 the columns (column c holds the 16-byte registers
 * c, c+8, …, c+56, i.e. words 2c+16r and 2c+16r+1).
 */
const RUNS: Int32Array[] = [];
for (let row = 0; row < 8; row++) RUNS.push(Int32Array.from({ length: 16 }, (_, k) => 2 * (16 * row + k)));
for (let col = 0; col < 8; col++) RUNS.push(Int32Array.from({ length: 16 }, (_, k) => 2 * (2 * col + 16 * (k >> 1) + (k & 1))));

function permute(q: Uint32Array, w: Int32Array): void {
  gb(q, w[0]!, w[4]!, w[8]!, w[12]!);
  gb(q, w[1]!, w[5]!, w[9]!, w[13]!);
  gb(q, w[2]!, w[6]!, w[10]!, w[14]!);
  gb(q, w[3]!, w[7]!, w[11]!, w[15]!);
  gb(q, w[0]!, w[5]!, w[10]!, w[15]!);
  gb(q, w[1]!, w[6]!, w[11]!, w[12]!);
  gb(q, w[2]!, w[7]!, w[8]!, w[13]!);
  gb(q, w[3]!, w[4]!, w[9]!, w[14]!);
}

const R = new Uint32Array(BLOCK_WORDS);
const Q = new Uint32Array(BLOCK_WORDS);

/**
 * The compression G of RFC 9106 §3.5: dst = P(x ⊕ y) ⊕ (x ⊕ y), xored into dst's old value when
 * `withXor` (passes after the first, version 1.3). Blocks are addressed by word offset in `mem`.
 */
function fill(mem: Uint32Array, x: number, y: number, dst: number, withXor: boolean, yMem: Uint32Array = mem, dstMem: Uint32Array = mem): void {
  for (let i = 0; i < BLOCK_WORDS; i++) R[i] = mem[x + i]! ^ yMem[y + i]!;
  Q.set(R);
  for (let r = 0; r < 16; r++) permute(Q, RUNS[r]!);
  if (withXor) for (let i = 0; i < BLOCK_WORDS; i++) dstMem[dst + i] = dstMem[dst + i]! ^ Q[i]! ^ R[i]!;
  else for (let i = 0; i < BLOCK_WORDS; i++) dstMem[dst + i] = Q[i]! ^ R[i]!;
}

function bytesToWords(b: Uint8Array, out: Uint32Array, off: number): void {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  for (let i = 0; i < BLOCK_WORDS; i++) out[off + i] = dv.getUint32(4 * i, true);
}

export function argon2id(o: Argon2Params): Uint8Array {
  const { p, t, length } = o;
  const whole = (n: number, min: number, max: number) => Number.isInteger(n) && n >= min && n <= max;
  if (!whole(p, 1, 0xffffff) || !whole(t, 1, 0xffffffff) || !whole(length, 4, 0xffffffff) || !whole(o.m, 8 * p, 0xffffffff)) {
    throw new RangeError('Argon2id parameters out of range');
  }
  const secret = o.secret ?? new Uint8Array(0);
  const ad = o.ad ?? new Uint8Array(0);
  const h0 = blake2b(
    64,
    le32(p), le32(length), le32(o.m), le32(t), le32(VERSION), le32(TYPE_ID),
    le32(o.password.length), o.password, le32(o.salt.length), o.salt,
    le32(secret.length), secret, le32(ad.length), ad,
  );
  const blocks = 4 * p * Math.floor(o.m / (4 * p));
  const laneLen = blocks / p;
  const segLen = laneLen / SYNC_POINTS;
  const mem = new Uint32Array(blocks * BLOCK_WORDS);
  const at = (lane: number, idx: number) => (lane * laneLen + idx) * BLOCK_WORDS;

  for (let l = 0; l < p; l++) {
    bytesToWords(hPrime(1024, h0, le32(0), le32(l)), mem, at(l, 0));
    bytesToWords(hPrime(1024, h0, le32(1), le32(l)), mem, at(l, 1));
  }

  const zero = new Uint32Array(BLOCK_WORDS);
  const input = new Uint32Array(BLOCK_WORDS);
  const addr = new Uint32Array(BLOCK_WORDS);
  const nextAddresses = () => {
    input[12] = input[12]! + 1; // the counter is word 6 (fits in 32 bits here)
    fill(zero, 0, 0, 0, false, input, addr);
    fill(zero, 0, 0, 0, false, addr, addr);
  };

  // Progress counts filled blocks; a report every `step` blocks and at the end of each segment.
  const filledTotal = t * blocks - 2 * p;
  const step = Math.max(1, Math.ceil(filledTotal / 100));
  let filled = 0;
  let nextReport = step;
  const report = () => {
    nextReport = filled + step;
    o.onProgress?.(filled / filledTotal);
  };
  for (let pass = 0; pass < t; pass++) {
    for (let slice = 0; slice < SYNC_POINTS; slice++) {
      for (let lane = 0; lane < p; lane++) {
        const independent = pass === 0 && slice < SYNC_POINTS / 2;
        if (independent) {
          input.fill(0);
          input[0] = pass;
          input[2] = lane;
          input[4] = slice;
          input[6] = blocks;
          input[8] = t;
          input[10] = TYPE_ID;
        }
        let start = 0;
        if (pass === 0 && slice === 0) {
          start = 2;
          if (independent) nextAddresses();
        }
        for (let i = start; i < segLen; i++) {
          const idx = slice * segLen + i;
          const prevIdx = idx === 0 ? laneLen - 1 : idx - 1;
          let j1: number;
          let j2: number;
          if (independent) {
            if (i % 128 === 0) nextAddresses();
            j1 = addr[2 * (i % 128)]!;
            j2 = addr[2 * (i % 128) + 1]!;
          } else {
            const prev = at(lane, prevIdx);
            j1 = mem[prev]!;
            j2 = mem[prev + 1]!;
          }
          const refLane = pass === 0 && slice === 0 ? lane : j2 % p;
          const sameLane = refLane === lane;
          let area: number;
          if (pass === 0) {
            if (slice === 0) area = i - 1;
            else area = sameLane ? slice * segLen + i - 1 : slice * segLen + (i === 0 ? -1 : 0);
          } else {
            area = sameLane ? laneLen - segLen + i - 1 : laneLen - segLen + (i === 0 ? -1 : 0);
          }
          const x = mulHi(j1, j1);
          const rel = area - 1 - mulHi(area, x);
          const startPos = pass !== 0 && slice !== SYNC_POINTS - 1 ? (slice + 1) * segLen : 0;
          const refIdx = (startPos + rel) % laneLen;
          fill(mem, at(lane, prevIdx), at(refLane, refIdx), at(lane, idx), pass !== 0);
          if (++filled >= nextReport) report();
        }
        if (filled !== nextReport - step) report();
      }
    }
  }

  const final = new Uint32Array(BLOCK_WORDS);
  for (let l = 0; l < p; l++) {
    const last = at(l, laneLen - 1);
    for (let i = 0; i < BLOCK_WORDS; i++) final[i] = final[i]! ^ mem[last + i]!;
  }
  const fb = new Uint8Array(1024);
  const dv = new DataView(fb.buffer);
  for (let i = 0; i < BLOCK_WORDS; i++) dv.setUint32(4 * i, final[i]!, true);
  mem.fill(0);
  return hPrime(length, fb);
}
