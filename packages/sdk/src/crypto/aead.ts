/**
 * AES-256-GCM with a text AAD: the one sealing step every construction of docs/CRYPTO.md uses.
 * The iv is 12 random bytes unless a caller passes one (test vectors only).
 */
import { b64, buf, randomBytes, subtle, unb64, utf8 } from '../bytes.js';

export interface Sealed {
  /** 12 bytes, b64url. */
  iv: string;
  /** ciphertext followed by the 16-byte tag, b64url. */
  ct: string;
}

export const IV_BYTES = 12;

export async function seal(key: CryptoKey, plaintext: Uint8Array, aad: string, iv?: Uint8Array): Promise<Sealed> {
  const nonce = iv ?? randomBytes(IV_BYTES);
  if (nonce.length !== IV_BYTES) throw new TypeError('iv must be 12 bytes');
  const ct = await subtle().encrypt({ name: 'AES-GCM', iv: buf(nonce), additionalData: buf(utf8(aad)), tagLength: 128 }, key, buf(plaintext));
  return { iv: b64(nonce), ct: b64(new Uint8Array(ct)) };
}

/** Throws (DOMException OperationError, or TypeError for bad encoding) when the tag does not verify. */
export async function open(key: CryptoKey, sealed: Sealed, aad: string): Promise<Uint8Array> {
  const iv = unb64(sealed.iv, IV_BYTES);
  const ct = unb64(sealed.ct);
  const pt = await subtle().decrypt({ name: 'AES-GCM', iv: buf(iv), additionalData: buf(utf8(aad)), tagLength: 128 }, key, buf(ct));
  return new Uint8Array(pt);
}

/** Imports 32 raw bytes as a non-extractable AES-256-GCM key. */
export function importAesKey(raw: Uint8Array, usages: KeyUsage[] = ['encrypt', 'decrypt']): Promise<CryptoKey> {
  if (raw.length !== 32) throw new TypeError('AES-256 key must be 32 bytes');
  return subtle().importKey('raw', buf(raw), { name: 'AES-GCM', length: 256 }, false, usages);
}
