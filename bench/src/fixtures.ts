/**
 * Request bodies of valid form. The service checks only the form of ciphertext, so no real
 * cryptography is done: random bytes of realistic sizes stand in for it.
 */
import { createECDH, randomBytes } from 'node:crypto';
import { encodeB64url, makeUlid } from '@svc/protocol';

export const b64 = (n: number): string => encodeB64url(randomBytes(n));
export const id16 = (): string => b64(16);
export const ulid = (): string => makeUlid(Date.now(), (n) => randomBytes(n));

/** A short message's ciphertext: its plaintext padded to 256 bytes (docs/CRYPTO.md) plus the 16-byte GCM tag. */
export const MESSAGE_CT_BYTES = 256 + 16;

/** A pool of ciphertexts, so the generator does not pay for randomness on every send. */
const ctPool = Array.from({ length: 64 }, () => b64(MESSAGE_CT_BYTES));
const ivPool = Array.from({ length: 64 }, () => b64(12));
let turn = 0;

export interface SendBody {
  id: string;
  to: { dm: string } | { room: string };
  keyId: string;
  iv: string;
  ct: string;
}

export function dmBody(to: string, id = ulid()): SendBody {
  turn = (turn + 1) & 63;
  return { id, to: { dm: to }, keyId: 'dm', iv: ivPool[turn]!, ct: ctPool[turn]! };
}

export function roomBody(room: string, keyId: string, id = ulid()): SendBody {
  turn = (turn + 1) & 63;
  return { id, to: { room }, keyId, iv: ivPool[turn]!, ct: ctPool[turn]! };
}

/** An uncompressed P-256 point that lies on the curve, as registration requires. */
function publicKey(): string {
  const ecdh = createECDH('prime256v1');
  return encodeB64url(ecdh.generateKeys());
}

export function registerBody(nick: string) {
  return {
    nick,
    authKey: b64(32),
    kdf: { alg: 'argon2id', salt: b64(16), m: 65536, t: 3, p: 1 },
    publicKey: publicKey(),
    encryptedKey: { iv: b64(12), ct: b64(48) },
  };
}

/** A wrapped room key for one member (60 bytes: a 32-byte key, its tag, some slack). */
export const wrappedKey = (to: string) => ({ to, iv: b64(12), ct: b64(48) });

/** A short random tag that keeps one run's nicks and device ids apart from another's. */
export const runTag = (): string => randomBytes(3).toString('hex');
