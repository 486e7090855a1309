/**
 * base64url without padding (RFC 4648 §5), in plain code so that it runs alike in browsers
 * and Node. Strict: only the url alphabet, no padding, no length that cannot occur.
 */
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const CODES = Uint8Array.from(ALPHABET, (c) => c.charCodeAt(0));
/** The value of each ASCII character, 255 for one outside the alphabet. */
const LOOKUP = new Uint8Array(128).fill(255);
for (let i = 0; i < ALPHABET.length; i++) LOOKUP[ALPHABET.charCodeAt(i)] = i;
const ascii = new TextDecoder();

const B64URL_RE = /^[A-Za-z0-9_-]*$/;

/** The platform's own base64 decoder (browsers since 2025, Node behind a flag), where there is one. */
type FromBase64 = (text: string, o: { alphabet: 'base64url'; lastChunkHandling: 'loose' }) => Uint8Array;
const fromBase64 = (Uint8Array as unknown as { fromBase64?: FromBase64 }).fromBase64;

/** Node's Buffer, where there is one: the part of it used here. */
interface NodeBufferCodec {
  from(text: string, encoding: 'base64url'): { toString(encoding: 'base64url'): string };
}
const nodeBuffer = (globalThis as { Buffer?: NodeBufferCodec }).Buffer;

/** True when `s` is unpadded base64url text (the empty string included). */
export function isB64url(s: unknown): s is string {
  if (typeof s !== 'string' || s.length % 4 === 1) return false;
  // In Node, a long text (an attachment's part: 32,000 characters) is checked by its native
  // codec, about four times faster than the regex: text that decodes and encodes back to itself
  // holds only the url alphabet (the decoder skips other characters and reads '+' and '/' as
  // '-' and '_', which then come back different). Anything else gets the regex's answer.
  if (nodeBuffer && s.length > 1024 && nodeBuffer.from(s, 'base64url').toString('base64url') === s) return true;
  return B64URL_RE.test(s);
}

/** Decoded length of valid unpadded base64url text. */
export function b64urlDecodedLength(s: string): number {
  return Math.floor((s.length * 3) / 4);
}

/** The 6-bit value of character `i` of `s`, or 255 when it is not of the url alphabet. */
const sextet = (s: string, i: number): number => {
  const c = s.charCodeAt(i);
  return c < 128 ? LOOKUP[c]! : 255;
};

/**
 * Decodes unpadded base64url; returns null when the text is not valid. Four characters at a time:
 * a sealed value of megabytes (a stored search index) decodes in tens of milliseconds.
 */
export function decodeB64url(s: string): Uint8Array | null {
  if (typeof s !== 'string' || s.length % 4 === 1) return null;
  if (fromBase64 && s.length > 1024) {
    // A long text (a sealed search part) through the platform's decoder, several times quicker.
    // It refuses '+', '/' and other characters, but skips white space and takes padding: either
    // leaves fewer bytes than the text's length means, so the length tells them apart.
    try {
      const out = fromBase64(s, { alphabet: 'base64url', lastChunkHandling: 'loose' });
      return out.length === b64urlDecodedLength(s) ? out : null;
    } catch {
      return null;
    }
  }
  const out = new Uint8Array(b64urlDecodedLength(s));
  const full = s.length - (s.length % 4);
  let o = 0;
  for (let i = 0; i < full; i += 4) {
    const a = sextet(s, i);
    const b = sextet(s, i + 1);
    const c = sextet(s, i + 2);
    const d = sextet(s, i + 3);
    if ((a | b | c | d) > 63) return null;
    const n = (a << 18) | (b << 12) | (c << 6) | d;
    out[o++] = n >> 16;
    out[o++] = (n >> 8) & 255;
    out[o++] = n & 255;
  }
  if (full < s.length) {
    const a = sextet(s, full);
    const b = sextet(s, full + 1);
    const c = full + 2 < s.length ? sextet(s, full + 2) : 0;
    if ((a | b | c) > 63) return null;
    const n = (a << 18) | (b << 12) | (c << 6);
    out[o] = n >> 16;
    if (full + 2 < s.length) out[o + 1] = (n >> 8) & 255;
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

/** The characters go into bytes first and become a string at once: no string is built piece by piece. */
export function encodeB64url(bytes: Uint8Array): string {
  const out = new Uint8Array(Math.ceil((bytes.length * 4) / 3));
  const full = bytes.length - (bytes.length % 3);
  let o = 0;
  for (let i = 0; i < full; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out[o++] = CODES[n >> 18]!;
    out[o++] = CODES[(n >> 12) & 63]!;
    out[o++] = CODES[(n >> 6) & 63]!;
    out[o++] = CODES[n & 63]!;
  }
  if (full < bytes.length) {
    const two = full + 1 < bytes.length;
    const n = (bytes[full]! << 16) | (two ? bytes[full + 1]! << 8 : 0);
    out[o] = CODES[n >> 18]!;
    out[o + 1] = CODES[(n >> 12) & 63]!;
    if (two) out[o + 2] = CODES[(n >> 6) & 63]!;
  }
  // Short ones (ids, keys) are quicker through fromCharCode; long ones through the decoder.
  return out.length <= 1024 ? String.fromCharCode(...out) : ascii.decode(out);
}
