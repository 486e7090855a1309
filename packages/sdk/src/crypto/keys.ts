/**
 * Account keys from the master secret (docs/CRYPTO.md), each an HKDF-SHA256 output with an empty
 * salt and its own info string, so one key says nothing about the other:
 *   authKey = HKDF(master, info "svc/auth/v1")   32 bytes, sent to the service
 *   encKey  = HKDF(master, info "svc/enc/v1")    AES-256-GCM, seals the identity key
 * The history key is not here: it hangs off the identity the encryption key opens (crypto/atrest.ts),
 * so that it survives a password change.
 */
import { b64 } from '../bytes.js';
import { importAesKey } from './aead.js';
import { hkdf } from './hkdf.js';

export const INFO_AUTH = 'svc/auth/v1';
export const INFO_ENC = 'svc/enc/v1';

export interface AccountKeys {
  /** b64url of 32 bytes: what the service checks at login. */
  authKey: string;
  /** Non-extractable AES-256-GCM key that seals the identity private key. */
  encKey: CryptoKey;
}

const EMPTY = new Uint8Array(0);

/** The raw bytes of each derived key; for test vectors only (the app never needs them). */
export async function deriveAccountKeyBytes(master: Uint8Array): Promise<{ auth: Uint8Array; enc: Uint8Array }> {
  if (master.length !== 32) throw new TypeError('master secret must be 32 bytes');
  return { auth: await hkdf(master, EMPTY, INFO_AUTH), enc: await hkdf(master, EMPTY, INFO_ENC) };
}

export async function deriveAccountKeys(master: Uint8Array): Promise<AccountKeys> {
  const k = await deriveAccountKeyBytes(master);
  const keys = { authKey: b64(k.auth), encKey: await importAesKey(k.enc) };
  k.enc.fill(0);
  return keys;
}
