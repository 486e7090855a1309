/**
 * The VAPID key pair (RFC 8292): P-256, the public key as its 65-byte uncompressed point and the
 * private key as its 32-byte scalar, both base64url (docs/PUSH.md).
 *
 * Node's ECDH hands out the scalar without its leading zero bytes, so about one generated key in
 * 200 was 31 bytes long; `web-push` refuses such a key, and every push of a deployment whose
 * first start made one failed. New keys are padded to 32 bytes, and a shorter key already kept in
 * the store by an earlier start, or given by the operator, is padded when it is loaded: it is the
 * same scalar, so the public key and every subscription stay valid.
 */
import { createECDH } from 'node:crypto';
import { decodeB64url, encodeB64url } from '@svc/protocol';

const SCALAR_BYTES = 32;

export interface VapidKeys {
  publicKey: string;
  privateKey: string;
}

export function newVapidKeys(): VapidKeys {
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  return { publicKey: encodeB64url(ecdh.getPublicKey()), privateKey: encodeB64url(fullLength(ecdh.getPrivateKey())) };
}

/**
 * The private key with its leading zero bytes: a scalar shorter than 32 bytes is padded; any other
 * key is returned as given (one that is not a scalar at all is `web-push`'s to refuse, at the
 * first push).
 */
export function fullLengthVapidPrivateKey(key: string): string {
  const bytes = decodeB64url(key);
  if (bytes === null || bytes.length === 0 || bytes.length >= SCALAR_BYTES) return key;
  return encodeB64url(fullLength(bytes));
}

function fullLength(scalar: Uint8Array): Uint8Array {
  if (scalar.length >= SCALAR_BYTES) return scalar;
  const out = new Uint8Array(SCALAR_BYTES);
  out.set(scalar, SCALAR_BYTES - scalar.length);
  return out;
}

/**
 * Why a key pair given by the operator is not one, or null when it is: the private key a P-256
 * scalar of at most 32 bytes as base64url (a shorter one is padded, above), the public key the
 * 65-byte uncompressed point it makes. Such a pair would otherwise start the service and fail
 * every push, and /api/config would hand browsers a key nothing signs for.
 */
export function vapidPairProblem(publicKey: string, privateKey: string): string | null {
  const priv = decodeB64url(privateKey);
  if (priv === null || priv.length === 0 || priv.length > SCALAR_BYTES) return 'VAPID_PRIVATE_KEY must be a P-256 private key: 32 bytes as base64url';
  const pub = decodeB64url(publicKey);
  if (pub === null || pub.length !== 65 || pub[0] !== 4) return 'VAPID_PUBLIC_KEY must be an uncompressed P-256 public key: 65 bytes as base64url';
  const ecdh = createECDH('prime256v1');
  try {
    ecdh.setPrivateKey(fullLength(priv));
  } catch {
    return 'VAPID_PRIVATE_KEY is not a valid P-256 private key';
  }
  return ecdh.getPublicKey().equals(pub) ? null : 'VAPID_PUBLIC_KEY is not the public key of VAPID_PRIVATE_KEY';
}
