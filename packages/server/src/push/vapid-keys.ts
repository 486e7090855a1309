/**
 * The VAPID key pair (RFC 8292): P-256, the public key as its 65-byte uncompressed point and the
 * private key as its 32-byte scalar, both base64url (docs/PUSH.md, "Configuring VAPID").
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
