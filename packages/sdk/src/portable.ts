/**
 * A signed-in session as plain data, for a program that keeps it in a file rather than in
 * IndexedDB (a command-line client, a bot). A browser's SessionState holds the identity private
 * key as a non-extractable CryptoKey, which only structured clone can keep; here it travels as
 * PKCS#8 bytes, so whoever holds the data holds the account's key: the program must seal it
 * (the command-line client seals its state file under the password or a key file).
 *
 * The PKCS#8 bytes are opened again from the sealed identity the service keeps, with the
 * password: a sign-in never hands them out, so that a web app cannot keep them by mistake.
 */
import { isPlainObject, type Kdf } from '@svc/protocol';
import { b64, buf, subtle, unb64 } from './bytes.js';
import { Messenger, type MessengerOptions } from './messenger.js';
import { keysFor } from './credentials.js';
import { openIdentity } from './crypto/identity.js';
import type { Argon2Fn } from './crypto/kdf.js';
import { SdkError } from './errors.js';
import { SESSION_STATE_VERSION } from './session.js';

export interface PortableSession {
  v: typeof SESSION_STATE_VERSION;
  nick: string;
  publicKey: string;
  /** The identity private key, PKCS#8, b64url. */
  pkcs8: string;
  kdf: Kdf;
  deviceId: string | null;
}

/**
 * The session of a signed-in Messenger as plain data. Derives the account keys from the password
 * once more and opens the identity the service holds, checked against the account's public key.
 */
export async function portableSession(m: Messenger, password: string, argon2?: Argon2Fn): Promise<PortableSession> {
  const keys = await keysFor(password, m.kdf, argon2);
  const me = await m.api.me();
  const identity = await openIdentity(keys.encKey, me.encryptedKey, m.nick, m.publicKey);
  try {
    return {
      v: SESSION_STATE_VERSION,
      nick: m.nick,
      publicKey: m.publicKey,
      pkcs8: b64(identity.pkcs8),
      kdf: { ...m.kdf },
      deviceId: m.api.device ?? null,
    };
  } finally {
    identity.pkcs8.fill(0);
  }
}

/**
 * A Messenger signed in from a PortableSession, like Messenger.resume: no password, no request.
 * SdkError `bad_session` when the data is malformed or its private key is not the public key's.
 */
export async function resumePortable(opts: MessengerOptions, p: unknown): Promise<Messenger> {
  if (!isPlainObject(p) || typeof p.pkcs8 !== 'string')
    throw new SdkError('bad_session', { message: 'The saved session cannot be resumed (pkcs8); log in again.' });
  let privateKey: CryptoKey;
  const bytes = unb64(p.pkcs8);
  try {
    privateKey = await subtle().importKey('pkcs8', buf(bytes), { name: 'ECDH', namedCurve: 'P-256' }, false, ['deriveBits']);
  } catch (cause) {
    throw new SdkError('bad_session', { message: 'The saved session cannot be resumed (pkcs8); log in again.', cause });
  } finally {
    bytes.fill(0);
  }
  return Messenger.resume(opts, { v: p.v, nick: p.nick, publicKey: p.publicKey, privateKey, kdf: p.kdf, deviceId: p.deviceId });
}
