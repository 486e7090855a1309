/** ULID checks (26 Crockford base32 characters, the first 10 a millisecond timestamp). Case-insensitive, as the ULID spec says. */
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const ULID_RE = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/i;

export function isUlid(s: unknown): s is string {
  return typeof s === 'string' && ULID_RE.test(s);
}

/** The creation time (ms) encoded in a valid ULID. */
export function ulidTime(s: string): number {
  let t = 0;
  const up = s.toUpperCase();
  for (let i = 0; i < 10; i++) t = t * 32 + CROCKFORD.indexOf(up[i]!);
  return t;
}

/** Encodes a time (ms) as the 10-character ULID time prefix. */
export function ulidTimePrefix(ms: number): string {
  let out = '';
  let t = ms;
  for (let i = 0; i < 10; i++) {
    out = CROCKFORD[t % 32]! + out;
    t = Math.floor(t / 32);
  }
  return out;
}

/** A new ULID for time `ms`, with 80 random bits from `random` (WebCrypto's getRandomValues in both runtimes). */
export function makeUlid(ms: number, random: (n: number) => Uint8Array): string {
  const r = random(16);
  let out = ulidTimePrefix(ms);
  for (let i = 0; i < 16; i++) out += CROCKFORD[r[i]! & 31]!;
  return out;
}
