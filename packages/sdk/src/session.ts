/**
 * A signed-in Messenger as an app keeps it across restarts (a page reload), so the user does not
 * type the password again while the service session (the cookie) lives.
 *
 * The state holds the identity private key as a non-extractable CryptoKey: it cannot be read out,
 * only used, and IndexedDB stores such keys as they are (structured clone). Nothing in it is
 * secret text. It holds no history key: that is derived again from the identity on resume (one
 * ECDH), so a stored state cannot carry a history key that disagrees with its identity.
 *
 * Whoever can use the stored key can read the account's messages on that device until the app
 * deletes the state (sign-out) — the same reach as the signed-in app itself.
 */
import { isDeviceId, isNick, isPlainObject, isPublicKey, type Kdf } from '@svc/protocol';
import { checkKdf } from './crypto/kdf.js';
import { SdkError } from './errors.js';

export const SESSION_STATE_VERSION = 1;

export interface SessionState {
  /** Format version; a state of another version is refused (log in again). */
  v: typeof SESSION_STATE_VERSION;
  nick: string;
  /** b64url of the 65-byte identity public key. */
  publicKey: string;
  /** The identity private key: ECDH P-256, non-extractable, usage deriveBits. */
  privateKey: CryptoKey;
  /** The account's KDF parameters as last known (account deletion re-derives the auth key). */
  kdf: Kdf;
  /** The device id this client registered (its X-Device), or null before ensureDevice. */
  deviceId: string | null;
}

const refuse = (why: string) => new SdkError('bad_session', { message: `The saved session cannot be resumed (${why}); log in again.` });

function isIdentityKey(k: unknown): k is CryptoKey {
  if (typeof k !== 'object' || k === null) return false;
  const key = k as Partial<CryptoKey> & { algorithm?: { name?: string; namedCurve?: string } };
  return (
    key.type === 'private' &&
    key.extractable === false &&
    key.algorithm?.name === 'ECDH' &&
    key.algorithm.namedCurve === 'P-256' &&
    Array.isArray(key.usages) &&
    key.usages.includes('deriveBits')
  );
}

/**
 * Checks the shape of a stored state (it comes back from storage as `unknown`) and returns it
 * with only the known fields; SdkError `bad_session` otherwise. Whether the private key belongs
 * to the public key is checked by Messenger.resume (it needs WebCrypto, so it is async).
 */
export function checkSessionState(s: unknown): SessionState {
  if (!isPlainObject(s)) throw refuse('not a saved session');
  if (s.v !== SESSION_STATE_VERSION) throw refuse(`format ${String(s.v)}`);
  if (!isNick(s.nick)) throw refuse('nick');
  if (!isPublicKey(s.publicKey)) throw refuse('publicKey');
  if (!isIdentityKey(s.privateKey)) throw refuse('privateKey');
  if (s.deviceId !== null && !isDeviceId(s.deviceId)) throw refuse('deviceId');
  let kdf: Kdf;
  try {
    kdf = checkKdf(s.kdf);
  } catch {
    throw refuse('kdf');
  }
  return { v: SESSION_STATE_VERSION, nick: s.nick, publicKey: s.publicKey, privateKey: s.privateKey, kdf, deviceId: s.deviceId };
}
