/**
 * The identity key pair: P-256 ECDH, made once at registration. The service keeps the public key
 * (65-byte uncompressed point, b64url) and the private key sealed under the encryption key:
 *   encryptedKey = AES-256-GCM(encKey, iv, PKCS#8(private), AAD "svc/identity/v1|<nick>")
 * The nick in the AAD stops the service from handing one account's blob to another.
 */
import type { EncryptedKey } from '@svc/protocol';
import { b64, buf, subtle, unb64 } from '../bytes.js';
import { SdkError } from '../errors.js';
import { open, seal } from './aead.js';

export const IDENTITY_AAD = (nick: string): string => `svc/identity/v1|${nick}`;

const EC = { name: 'ECDH', namedCurve: 'P-256' } as const;

export interface Identity {
  /** b64url of the 65-byte uncompressed point. */
  publicKey: string;
  /** Non-extractable ECDH private key (usage deriveBits only). */
  privateKey: CryptoKey;
}

/** A freshly made identity, with the PKCS#8 bytes needed once to seal it. */
export interface NewIdentity extends Identity {
  pkcs8: Uint8Array;
}

export async function generateIdentity(): Promise<NewIdentity> {
  const pair = await subtle().generateKey(EC, true, ['deriveBits']);
  const pkcs8 = new Uint8Array(await subtle().exportKey('pkcs8', pair.privateKey));
  const pub = new Uint8Array(await subtle().exportKey('raw', pair.publicKey));
  return { publicKey: b64(pub), privateKey: await importPrivate(pkcs8, false), pkcs8 };
}

function importPrivate(pkcs8: Uint8Array, extractable: boolean): Promise<CryptoKey> {
  return subtle().importKey('pkcs8', buf(pkcs8), EC, extractable, ['deriveBits']);
}

/** Imports a peer's b64url public key for ECDH; throws TypeError when it is not a P-256 point. */
export function importPublicKey(publicKey: string): Promise<CryptoKey> {
  return subtle().importKey('raw', buf(unb64(publicKey, 65)), EC, false, []);
}

export function sealIdentity(encKey: CryptoKey, identity: { pkcs8: Uint8Array }, nick: string, iv?: Uint8Array): Promise<EncryptedKey> {
  return seal(encKey, identity.pkcs8, IDENTITY_AAD(nick), iv);
}

/** Opens the blob to its PKCS#8 bytes (for re-sealing under a new password); SdkError bad_identity on failure. */
export async function openIdentityPkcs8(encKey: CryptoKey, encryptedKey: EncryptedKey, nick: string): Promise<Uint8Array> {
  try {
    return await open(encKey, encryptedKey, IDENTITY_AAD(nick));
  } catch (cause) {
    throw new SdkError('bad_identity', { cause });
  }
}

/**
 * Opens the sealed private key and checks that it belongs to `publicKey` (the key the service
 * publishes to peers), so a blob and a public key that do not match are refused, not used.
 */
export async function openIdentity(encKey: CryptoKey, encryptedKey: EncryptedKey, nick: string, publicKey: string): Promise<NewIdentity> {
  const pkcs8 = await openIdentityPkcs8(encKey, encryptedKey, nick);
  let jwk: JsonWebKey;
  try {
    jwk = await subtle().exportKey('jwk', await importPrivate(pkcs8, true));
  } catch (cause) {
    throw new SdkError('bad_identity', { cause });
  }
  const pub = unb64(publicKey, 65);
  if (jwk.x !== b64(pub.subarray(1, 33)) || jwk.y !== b64(pub.subarray(33, 65))) {
    throw new SdkError('bad_identity', { message: 'The identity key does not match the published public key.' });
  }
  return { publicKey, privateKey: await importPrivate(pkcs8, false), pkcs8 };
}

/**
 * Whether a (non-extractable) private key belongs to `publicKey`, without exporting it: with a
 * throwaway key pair E, ECDH(private, E.public) equals ECDH(E.private, publicKey) only when
 * publicKey is the private key's point (or its negation, which no stored pair holds by accident).
 * Used when a saved session is resumed, so mismatched stored fields are refused, not used.
 */
export async function identityMatches(privateKey: CryptoKey, publicKey: string): Promise<boolean> {
  try {
    const e = await subtle().generateKey(EC, false, ['deriveBits']);
    const a = new Uint8Array(await subtle().deriveBits({ name: 'ECDH', public: e.publicKey }, privateKey, 256));
    const b = new Uint8Array(await subtle().deriveBits({ name: 'ECDH', public: await importPublicKey(publicKey) }, e.privateKey, 256));
    return a.length === b.length && a.every((x, i) => x === b[i]);
  } catch {
    return false;
  }
}
