/**
 * Checks that 65 bytes are an uncompressed P-256 point on the curve (y² = x³ − 3x + b mod p).
 * Plain BigInt arithmetic so that the protocol stays free of runtime dependencies; the
 * service uses it for push keys and identity public keys, which it must never trust blindly.
 */
const P = 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffffn;
const B = 0x5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604bn;

function toBigInt(bytes: Uint8Array): bigint {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  return n;
}

export function isP256Point(bytes: Uint8Array | null): boolean {
  if (!bytes || bytes.length !== 65 || bytes[0] !== 0x04) return false;
  const x = toBigInt(bytes.subarray(1, 33));
  const y = toBigInt(bytes.subarray(33, 65));
  if (x >= P || y >= P) return false;
  const lhs = (y * y) % P;
  const rhs = (((x * x) % P) * x - 3n * x + B) % P;
  return lhs === ((rhs % P) + P) % P;
}
