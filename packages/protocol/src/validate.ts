/**
 * Validators for every value type of docs/API.md, and the push subscription a device registers.
 * Each returns a boolean (or the parsed value / null) and never throws: the caller decides
 * which field to name in the `invalid` error, because the order of checks is part of the
 * interface (docs/API.md).
 */
import { isB64url, decodeB64url, b64urlDecodedLength, decodeB64urlLenient } from './b64url.js';
import { isP256Point } from './p256.js';
import { KDF_BOUNDS, LIMITS } from './limits.js';
import type { Kdf, EncryptedKey, WrappedKey, PushSubscriptionInput } from './types.js';

export const NICK_RE = /^[a-z0-9_]{2,32}$/;
const DEVICE_ID_RE = /^[A-Za-z0-9_-]{8,64}$/;

export function isNick(v: unknown): v is string {
  return typeof v === 'string' && NICK_RE.test(v);
}

export function isDeviceId(v: unknown): v is string {
  return typeof v === 'string' && DEVICE_ID_RE.test(v);
}

/** b64url text that decodes to exactly `n` bytes. */
export function isB64urlOfLength(v: unknown, n: number): v is string {
  return isB64url(v) && b64urlDecodedLength(v) === n;
}

/** id16: 16 random bytes as unpadded base64url (22 characters). */
export function isId16(v: unknown): v is string {
  return isB64urlOfLength(v, 16);
}

/** iv: 12 bytes as unpadded base64url. */
export function isIv(v: unknown): v is string {
  return isB64urlOfLength(v, 12);
}

/** Ciphertext: valid b64url of at least one AES-GCM tag (16 bytes), and at most `max` bytes when given. */
export function isCt(v: unknown, max = Infinity): v is string {
  if (!isB64url(v)) return false;
  const n = b64urlDecodedLength(v);
  return n >= LIMITS.minCtBytes && n <= max;
}

export function isAuthKey(v: unknown): v is string {
  return isB64urlOfLength(v, 32);
}

export function isPublicKey(v: unknown): v is string {
  return isB64urlOfLength(v, 65) && isP256Point(decodeB64url(v));
}

export function isEncryptedKey(v: unknown): v is EncryptedKey {
  if (!isPlainObject(v)) return false;
  return isIv(v.iv) && isCt(v.ct, LIMITS.encryptedKeyMaxBytes);
}

function inBounds(v: unknown, b: { min: number; max: number }): boolean {
  return typeof v === 'number' && Number.isInteger(v) && v >= b.min && v <= b.max;
}

export function isKdf(v: unknown): v is Kdf {
  if (!isPlainObject(v)) return false;
  return (
    v.alg === 'argon2id' && isB64urlOfLength(v.salt, 16) && inBounds(v.m, KDF_BOUNDS.m) && inBounds(v.t, KDF_BOUNDS.t) && inBounds(v.p, KDF_BOUNDS.p)
  );
}

/** Only the fields of the kdf object, in their order, so nothing extra is stored or echoed. */
export function pickKdf(v: Kdf): Kdf {
  return { alg: 'argon2id', salt: v.salt, m: v.m, t: v.t, p: v.p };
}

const CONTROL_RE = /\p{Cc}/u;
const BIDI_OVERRIDE_RE = /[\u202A-\u202E\u2066-\u2069]/;
const LONE_SURROGATE_RE = /\p{Cs}/u;
const ONLY_SPACE_RE = /^[\s\p{White_Space}]*$/u;

/** Room name: 1 to 64 characters (code points), no control or bidi override characters, not only whitespace. */
export function isRoomName(v: unknown): v is string {
  if (typeof v !== 'string') return false;
  const chars = [...v].length;
  if (chars < 1 || chars > LIMITS.roomNameChars) return false;
  if (CONTROL_RE.test(v) || BIDI_OVERRIDE_RE.test(v) || LONE_SURROGATE_RE.test(v)) return false;
  return !ONLY_SPACE_RE.test(v);
}

export function isWrappedKey(v: unknown): v is WrappedKey {
  return isPlainObject(v) && isNick(v.to) && isIv(v.iv) && isCt(v.ct);
}

export function isWrappedKeyList(v: unknown): v is WrappedKey[] {
  return Array.isArray(v) && v.every(isWrappedKey);
}

/** True for a JSON object (not an array, not null). */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Push subscription keys: p256dh a P-256 point (65 bytes), auth 16 bytes; padded base64url accepted. */
export function isPushSubscription(v: unknown): v is PushSubscriptionInput {
  if (!isPlainObject(v) || !isPlainObject(v.keys)) return false;
  if (!isPushEndpointShape(v.endpoint)) return false;
  const p256dh = decodeB64urlLenient(v.keys.p256dh);
  const auth = decodeB64urlLenient(v.keys.auth);
  return isP256Point(p256dh) && auth !== null && auth.length === 16;
}

/**
 * The endpoint's URL shape: absolute https with a host, at most 2048 characters. Whether a
 * literal IP host is public is the server's business (it needs an address classifier).
 */
export function isPushEndpointShape(v: unknown): v is string {
  if (typeof v !== 'string' || v.length > LIMITS.pushEndpointChars) return false;
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    return false;
  }
  return u.protocol === 'https:' && u.hostname.length > 0 && u.username === '' && u.password === '';
}

/**
 * Free-form strings that are stored or looked up as given (invite codes, push endpoints). No such
 * value ever legitimately holds a control character or a lone surrogate, and PostgreSQL cannot
 * hold U+0000 in TEXT at all (it fails the statement, which would be a 500), while a lone
 * surrogate would be stored changed (as U+FFFD). Such input is refused as a shape error instead,
 * the same on both stores.
 */
export function isStorableText(s: string): boolean {
  return !CONTROL_RE.test(s) && !LONE_SURROGATE_RE.test(s);
}
