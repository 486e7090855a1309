/**
 * Keys that only the account's own devices hold: each is HKDF-SHA256 of the ECDH of the identity
 * with its own public key (the x-coordinate), with its own info string. The identity opens only
 * under the password-derived encryption key, so "the password alone" gives every one of them back
 * on any device, and a password change (which re-seals the same identity) keeps them.
 *
 *   history  "svc/history/v1"   records at rest (atrest.ts)
 *   transfer "svc/transfer/v1"  history moved between the account's devices (conversation/transfer.ts)
 *   export   "svc/export/v1"    the sealed history file (conversation/export.ts)
 */
import { buf, subtle, unb64 } from '../bytes.js';
import { importAesKey } from './aead.js';
import { hkdf } from './hkdf.js';
import type { Identity } from './identity.js';

export const INFO_HISTORY = 'svc/history/v1';
export const INFO_TRANSFER = 'svc/transfer/v1';
export const INFO_EXPORT = 'svc/export/v1';

/** The raw key bytes for `info`; for test vectors only. */
export async function ownKeyBytes(identity: Identity, info: string): Promise<Uint8Array> {
  const pub = await subtle().importKey('raw', buf(unb64(identity.publicKey, 65)), { name: 'ECDH', namedCurve: 'P-256' }, false, []);
  const shared = new Uint8Array(await subtle().deriveBits({ name: 'ECDH', public: pub }, identity.privateKey, 256));
  try {
    return await hkdf(shared, new Uint8Array(0), info);
  } finally {
    shared.fill(0);
  }
}

/** A non-extractable AES-256-GCM key for `info`, the same on every device of the account. */
export async function deriveOwnKey(identity: Identity, info: string): Promise<CryptoKey> {
  const raw = await ownKeyBytes(identity, info);
  try {
    return await importAesKey(raw);
  } finally {
    raw.fill(0);
  }
}
