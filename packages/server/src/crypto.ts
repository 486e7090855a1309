/** Server-side secrets and comparisons: session tokens, key hashes, KDF decoys. */
import { createHash, createHmac, hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { encodeB64url, decodeB64url } from '@svc/protocol';

/** A new session token: 32 random bytes, b64url. */
export function newToken(): string {
  return encodeB64url(randomBytes(32));
}

/** The stored form of a session token: hex SHA-256. The token itself is never stored. */
export function sessionId(token: string): string {
  // One call, no Hash object: this runs on every request that carries a session.
  return hash('sha256', token, 'hex');
}

/**
 * The stored form of an authKey: SHA-256 of its 32 bytes. The authKey is already the output of
 * Argon2id and HKDF, so a fast hash suffices; a leaked database then does not let anyone log in.
 */
export function authKeyHash(authKey: string): Uint8Array {
  return createHash('sha256').update(decodeB64url(authKey)!).digest();
}

/** Constant-time comparison of two hashes (equal length by construction; unequal lengths are refused alike). */
export function sameHash(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) {
    timingSafeEqual(a, a);
    return false;
  }
  return timingSafeEqual(a, b);
}

/** Decoy salt for a nick with no account: first 16 bytes of HMAC-SHA256(secret, "kdf\0" + nick). */
export function decoySalt(secret: string, nick: string): string {
  return encodeB64url(createHmac('sha256', Buffer.from(secret, 'base64url')).update(`kdf\0${nick}`).digest().subarray(0, 16));
}

export function randomSecret(bytes = 32): string {
  return encodeB64url(randomBytes(bytes));
}
