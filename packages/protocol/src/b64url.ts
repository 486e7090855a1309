/**
 * base64url without padding (RFC 4648 §5), in plain code so that it runs alike in browsers
 * and Node. Strict: only the url alphabet, no padding, no length that cannot occur.
 */
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const LOOKUP = new Int16Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) LOOKUP[ALPHABET.charCodeAt(i)] = i;

const B64URL_RE = /^[A-Za-z0-9_-]*$/;

/** True when `s` is unpadded base64url text (the empty string included). */
export function isB64url(s: unknown): s is string {
  return typeof s === 'string' && s.length % 4 !== 1 && B64URL_RE.test(s);
}

/** Decoded length of valid unpadded base64url text. */
export function b64urlDecodedLength(s: string): number {
  return Math.floor((s.length * 3) / 4);
}

/** Decodes unpadded base64url; returns null when the text is not valid. */
export function decodeB64url(s: string): Uint8Array | null {
  if (!isB64url(s)) return null;
  const out = new Uint8Array(b64urlDecodedLength(s));
  let bits = 0;
  let acc = 0;
  let o = 0;
  for (let i = 0; i < s.length; i++) {
    acc = (acc << 6) | LOOKUP[s.charCodeAt(i)]!;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (acc >> bits) & 0xff;
    }
  }
  return out;
}

/** Decodes base64url that may carry `=` padding (as browsers' push subscriptions sometimes do). */
export function decodeB64urlLenient(s: unknown): Uint8Array | null {
  if (typeof s !== 'string') return null;
  let t = s;
  if (t.length % 4 === 0 && t.endsWith('=')) t = t.replace(/={1,2}$/, '');
  return decodeB64url(t);
}

export function encodeB64url(bytes: Uint8Array): string {
  let out = '';
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out += ALPHABET[n >> 18]! + ALPHABET[(n >> 12) & 63]! + ALPHABET[(n >> 6) & 63]! + ALPHABET[n & 63]!;
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = bytes[i]! << 16;
    out += ALPHABET[n >> 18]! + ALPHABET[(n >> 12) & 63]!;
  } else if (rest === 2) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8);
    out += ALPHABET[n >> 18]! + ALPHABET[(n >> 12) & 63]! + ALPHABET[(n >> 6) & 63]!;
  }
  return out;
}
