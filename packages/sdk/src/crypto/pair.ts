/**
 * Pair key(A, B) = HKDF-SHA256(ECDH(A, B) x-coordinate, salt SHA-256(sorted nicks joined by "\n"),
 * info "svc/pair/v1") as an AES-256-GCM key. Both sides compute the same key; pair key(A, A)
 * (ECDH with one's own public key) protects one's own copies.
 */
import { subtle, utf8 } from '../bytes.js';
import { importAesKey } from './aead.js';
import { hkdf, sha256 } from './hkdf.js';
import { importPublicKey } from './identity.js';

export const INFO_PAIR = 'svc/pair/v1';

/** The HKDF salt: SHA-256 of the two nicks sorted (code-unit order, which is byte order for nicks) and joined by a newline. */
export function pairSalt(nickA: string, nickB: string): Promise<Uint8Array> {
  return sha256(utf8([nickA, nickB].sort().join('\n')));
}

/** The raw 32 key bytes; for test vectors only. */
export async function pairKeyBytes(myPrivateKey: CryptoKey, myNick: string, peerNick: string, peerPublicKey: string): Promise<Uint8Array> {
  const peer = await importPublicKey(peerPublicKey);
  const shared = new Uint8Array(await subtle().deriveBits({ name: 'ECDH', public: peer }, myPrivateKey, 256));
  return hkdf(shared, await pairSalt(myNick, peerNick), INFO_PAIR);
}

export async function pairKey(myPrivateKey: CryptoKey, myNick: string, peerNick: string, peerPublicKey: string): Promise<CryptoKey> {
  const raw = await pairKeyBytes(myPrivateKey, myNick, peerNick, peerPublicKey);
  const key = await importAesKey(raw);
  raw.fill(0);
  return key;
}
