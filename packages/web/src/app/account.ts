/**
 * Account lifecycle on this browser: sign up, sign in, resume after a reload, sign out, change the
 * password, delete the account. While signed in, the SDK's saved session (Messenger.exportSession:
 * the identity key as a non-extractable CryptoKey, nick, KDF parameters, device id) is kept in the
 * account's IndexedDB so a reload needs no password; signing out removes it, so the history stored
 * here (sealed under a key derived from the identity) needs the password again.
 */
import { ApiClient, Messenger, isSdkError, type KeyCheck, type MessengerOptions, type OnProgress } from '@svc/sdk';
import { currentAccount, deviceIdFor, forgetDeviceId, setCurrentAccount } from './device.js';
import { Db, STORES } from './idb.js';
import { workerArgon2 } from './kdf/worker-argon2.js';
import { Session } from './session.js';

/** The kv key of the saved session. A save the SDK cannot resume (bad_session) asks for the password once. */
const SAVED = 'identity';

function messengerOptions(): { opts: MessengerOptions; bindTrust: (s: Session) => void } {
  let check: KeyCheck | null = null;
  const opts: MessengerOptions = {
    api: new ApiClient(),
    // The trust store needs the account's keys, which exist only after login: bind it late.
    keyCheck: (nick, key, purpose) => (check ? check(nick, key, purpose) : undefined),
    // Argon2id in a worker, so the page stays responsive and shows progress.
    argon2: workerArgon2,
  };
  return { opts, bindTrust: (s) => (check = s.trust.keyCheck) };
}

function newMessenger(): { m: Messenger; bindTrust: (s: Session) => void } {
  const { opts, bindTrust } = messengerOptions();
  return { m: new Messenger(opts), bindTrust };
}

async function open(m: Messenger, bindTrust: (s: Session) => void): Promise<Session> {
  const db = await Db.open(m.nick);
  const deviceId = deviceIdFor(m.nick);
  await m.ensureDevice(deviceId);
  const s = new Session(m, db, deviceId);
  bindTrust(s);
  await s.load();
  await db.put(STORES.kv, m.exportSession(), SAVED);
  setCurrentAccount(m.nick);
  return s;
}

export async function signUp(o: { nick: string; password: string; invite?: string }, onProgress: OnProgress): Promise<Session> {
  const { m, bindTrust } = newMessenger();
  await m.register(o.invite ? o : { nick: o.nick, password: o.password }, onProgress);
  return open(m, bindTrust);
}

export async function signIn(o: { nick: string; password: string }, onProgress: OnProgress): Promise<Session> {
  const { m, bindTrust } = newMessenger();
  await m.login(o, onProgress);
  return open(m, bindTrust);
}

/**
 * Reopens the account this browser was signed in to, if its session is still valid.
 * Returns null (and forgets the saved identity) when the service no longer knows the session.
 */
export async function resume(): Promise<{ session: Session | null; ended: boolean; nick: string | null }> {
  const nick = currentAccount();
  if (!nick) return { session: null, ended: false, nick: null };
  const db = await Db.open(nick);
  try {
    const saved = await db.get<{ nick?: unknown }>(STORES.kv, SAVED);
    if (!saved || saved.nick !== nick) return { session: null, ended: false, nick };
    const { opts, bindTrust } = messengerOptions();
    let m: Messenger;
    try {
      m = await Messenger.resume(opts, saved);
      await m.api.me();
    } catch (e) {
      // The service ended the session, or the saved one is not usable: ask for the password.
      if (isSdkError(e, 'unauthenticated') || isSdkError(e, 'bad_session')) {
        await db.delete(STORES.kv, SAVED);
        setCurrentAccount(null);
        return { session: null, ended: isSdkError(e, 'unauthenticated'), nick };
      }
      throw e;
    }
    return { session: await open(m, bindTrust), ended: false, nick };
  } finally {
    db.close();
  }
}

/** Forgets the keys this browser holds for the account; the encrypted history stays. */
export async function forgetLocalKeys(s: Session): Promise<void> {
  await s.db.delete(STORES.kv, SAVED).catch(() => undefined);
  setCurrentAccount(null);
  s.db.close();
}

export async function signOut(s: Session): Promise<void> {
  try {
    await s.m.logout();
  } finally {
    await forgetLocalKeys(s);
  }
}

export async function changePassword(s: Session, oldPassword: string, newPassword: string, onProgress: OnProgress): Promise<void> {
  await s.m.changePassword(oldPassword, newPassword, {}, onProgress);
  await s.db.put(STORES.kv, s.m.exportSession(), SAVED);
}

/** Deletes the account at the service, then everything this browser kept for it. */
export async function deleteAccount(s: Session, password: string, onProgress: OnProgress): Promise<void> {
  await s.m.deleteAccount(password, onProgress);
  s.db.close();
  setCurrentAccount(null);
  forgetDeviceId(s.nick);
  await Db.destroy(s.nick).catch(() => undefined);
}

/** This device was removed (here or elsewhere): a later sign-in registers a new one. */
export async function deviceGone(s: Session): Promise<void> {
  forgetDeviceId(s.nick);
  await forgetLocalKeys(s);
}
