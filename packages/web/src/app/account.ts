/**
 * Account lifecycle on this browser: sign up, sign in, resume after a reload, sign out, change the
 * password, delete the account. While signed in, the SDK's saved session (Messenger.exportSession:
 * the identity key as a non-extractable CryptoKey, nick, KDF parameters, device id) is kept in the
 * account's IndexedDB so a reload needs no password; signing out removes it, so the history stored
 * here (sealed under a key derived from the identity) needs the password again.
 * Resuming works offline: the saved session and the history are local, so the app opens with the
 * stored chats and registers the device once the service answers (connection.ts).
 *
 * The account's database is named by a tag of its index key (idb.ts), known once signed in; a
 * database of the old layout, named by the nick, is moved into it then (migrate.ts).
 */
import { ApiClient, Messenger, isSdkError, type KeyCheck, type MessengerOptions, type OnProgress, type SessionState } from '@svc/sdk';
import { restoreChats } from './chatcache.js';
import { currentAccount, deviceIdFor, forgetDeviceId, rememberKdf, seenKdf, setCurrentAccount } from './device.js';
import { Db, STORES, accountDbName, done, isAccountDbName, openExisting } from './idb.js';
import { legacyDbName } from './legacy.js';
import { moveLegacy } from './migrate.js';
import { newAccountKdf } from './kdf/test-kdf.js';
import { workerArgon2 } from './kdf/worker-argon2.js';
import { Session } from './session.js';

/** The kv key of the saved session. A save the SDK cannot resume (bad_session) asks for the password once. */
const SAVED = 'identity';

async function messengerOptions(nick?: string): Promise<{ opts: MessengerOptions; bindTrust: (s: Session) => void }> {
  let check: KeyCheck | null = null;
  const seen = nick ? await seenKdf(nick) : null;
  const opts: MessengerOptions = {
    // Sign-in refuses weaker KDF parameters than this browser saw for the account, or than the
    // parameters this browser gives new accounts when it never saw it (then the person may accept).
    kdfFloor: seen ?? newAccountKdf(),
    api: new ApiClient(),
    // The trust store needs the account's keys, which exist only after login: bind it late.
    keyCheck: (nick, key, purpose) => (check ? check(nick, key, purpose) : undefined),
    // Argon2id in a worker, so the page stays responsive and shows progress.
    argon2: workerArgon2,
  };
  return { opts, bindTrust: (s) => (check = s.trust.keyCheck) };
}

async function newMessenger(nick?: string): Promise<{ m: Messenger; bindTrust: (s: Session) => void }> {
  const { opts, bindTrust } = await messengerOptions(nick);
  return { m: new Messenger(opts), bindTrust };
}

/** Whether a failed request says only that the service is out of reach (or down) for now. */
function unreachable(e: unknown): boolean {
  return isSdkError(e, 'network') || isSdkError(e, 'internal') || isSdkError(e, 'bad_response') || isSdkError(e, 'rate_limited');
}

/**
 * Registers this browser's device (idempotent). With `mayWait` (a resume) an unreachable service
 * does not stop the start: the device is only named, and registered later (connection.ts).
 * Returns whether it is registered.
 */
async function registerDevice(m: Messenger, deviceId: string, mayWait: boolean): Promise<boolean> {
  if (!mayWait) {
    await m.ensureDevice(deviceId);
    return true;
  }
  try {
    if (navigator.onLine) {
      await m.ensureDevice(deviceId);
      return true;
    }
  } catch (e) {
    if (!unreachable(e)) throw e;
  }
  m.api.setDevice(deviceId);
  return false;
}

async function open(m: Messenger, bindTrust: (s: Session) => void, mayWait = false): Promise<{ session: Session; deviceReady: boolean }> {
  const name = await accountDbName(m.indexKey);
  const db = await Db.open(name);
  try {
    await moveLegacy(m, db);
  } catch (e) {
    db.close();
    throw e;
  }
  const deviceId = await deviceIdFor(m.indexKey, m.nick);
  const deviceReady = await registerDevice(m, deviceId, mayWait);
  const s = new Session(m, db, deviceId);
  bindTrust(s);
  await s.load();
  await db.put(STORES.kv, m.exportSession(), SAVED);
  setCurrentAccount(name);
  await rememberKdf(m.nick, m.kdf);
  return { session: s, deviceReady };
}

export async function signUp(o: { nick: string; password: string; invite?: string }, onProgress: OnProgress): Promise<Session> {
  const { m, bindTrust } = await newMessenger();
  await m.register({ nick: o.nick, password: o.password, ...(o.invite ? { invite: o.invite } : {}), kdf: newAccountKdf() }, onProgress);
  return (await open(m, bindTrust)).session;
}

/** `acceptWeakKdf`: the person read the warning of a `kdf_weak` refusal and goes on anyway (only offered when this browser never saw the account). */
export async function signIn(o: { nick: string; password: string; acceptWeakKdf?: boolean }, onProgress: OnProgress): Promise<Session> {
  const { m, bindTrust } = await newMessenger(o.nick);
  await m.login(o, onProgress);
  const { session } = await open(m, bindTrust);
  session.askHistory = await isNewDevice(session);
  return session;
}

/**
 * A sign-in on a device that holds no history of the account, while the account has another
 * device: that one may send the history (docs/WEB.md). A resume never asks.
 */
async function isNewDevice(s: Session): Promise<boolean> {
  if ((await s.db.count(STORES.messages)) > 0) return false;
  const devices = await s.m.api.devices().catch(() => []);
  return devices.some((d) => d.id !== s.deviceId);
}

export interface Resumed {
  session: Session | null;
  /** The service said the session ended: ask for the password, saying why. */
  ended: boolean;
  nick: string | null;
  /** False after an offline start: the device is registered once the service answers. */
  deviceReady: boolean;
  /** The app was locked: the password opens it again (unlock). */
  locked?: boolean;
}

/** The saved session while the app is locked: the same, without the private key. */
type LockedState = Omit<SessionState, 'privateKey'> & { locked: true };

function isLocked(state: unknown): state is LockedState {
  return typeof state === 'object' && state !== null && (state as { locked?: unknown }).locked === true;
}

/** Runs `f` on the `kv` store of a database that exists, without creating or upgrading it. */
async function withKv<T>(name: string, mode: IDBTransactionMode, f: (kv: IDBObjectStore) => Promise<T>): Promise<T | undefined> {
  const db = await openExisting(name);
  if (!db) return undefined;
  try {
    return db.objectStoreNames.contains(STORES.kv) ? await f(db.transaction(STORES.kv, mode).objectStore(STORES.kv)) : undefined;
  } finally {
    db.close();
  }
}

const readSaved = (name: string) => withKv(name, 'readonly', (kv) => done(kv.get(SAVED)) as Promise<{ nick?: unknown } | undefined>);
const dropSaved = (name: string) => withKv(name, 'readwrite', (kv) => done(kv.delete(SAVED)));

/**
 * Reopens the account this browser was signed in to, if its session is still valid.
 * Returns null (and forgets the saved identity) when the service no longer knows the session.
 * Offline (the browser says so, or the service cannot be reached) it opens from what is stored;
 * the service checks the session when it is reached again. `svc.account` names the database; a
 * nick there is of the old layout, whose database `open` moves.
 */
export async function resume(): Promise<Resumed> {
  const current = currentAccount();
  if (!current) return { session: null, ended: false, nick: null, deviceReady: false };
  const legacyNick = isAccountDbName(current) ? null : current;
  const name = legacyNick === null ? current : legacyDbName(legacyNick);
  const state = await readSaved(name);
  const nick = typeof state?.nick === 'string' ? state.nick : legacyNick;
  const none = { session: null, ended: false, nick, deviceReady: false };
  if (!state || (legacyNick !== null && state.nick !== legacyNick)) return none;
  if (isLocked(state)) return { ...none, locked: true };
  const { opts, bindTrust } = await messengerOptions();
  let m: Messenger;
  try {
    // Local only (no request); the SDK's test session.test.ts holds it to that.
    m = await Messenger.resume(opts, state);
    if (navigator.onLine) {
      await m.api.me().catch((e: unknown) => {
        if (!unreachable(e)) throw e;
      });
    }
  } catch (e) {
    // The service ended the session, or the saved one is not usable: ask for the password.
    if (isSdkError(e, 'unauthenticated') || isSdkError(e, 'bad_session')) {
      await dropSaved(name);
      setCurrentAccount(null);
      return { ...none, ended: isSdkError(e, 'unauthenticated') };
    }
    throw e;
  }
  // A database holding another account's session is not this account's history.
  if (legacyNick === null && (await accountDbName(m.indexKey)) !== name) return none;
  const { session, deviceReady } = await open(m, bindTrust, true);
  await restoreChats(session);
  return { session, ended: false, nick, deviceReady };
}

/**
 * Locks the app: the saved session loses its private key (the rest stays, so the password opens
 * it again without a new login) and the database closes; the caller drops the Session, and with it
 * every key in memory. A reload while locked asks for the password.
 */
export async function lock(s: Session): Promise<void> {
  const { privateKey: _dropped, ...rest } = s.m.exportSession();
  const locked: LockedState = { ...rest, locked: true };
  try {
    await s.db.put(STORES.kv, locked, SAVED);
  } finally {
    s.db.close();
  }
}

/** Whether the account this browser is signed in to is locked now (another tab may have locked it). */
export async function isLockedNow(): Promise<boolean> {
  const name = currentAccount();
  return name !== null && isAccountDbName(name) && isLocked(await readSaved(name));
}

/**
 * Opens the locked account with its password: the keys are derived again with the saved KDF
 * parameters and open the identity the service keeps (Messenger.unlock: GET /api/me with the
 * session cookie, no new login); then the account opens as after a reload. A wrong password
 * throws `bad_identity` and changes nothing. When the service ended the session meanwhile, the
 * saved session is forgotten and `ended` says so (sign in again).
 */
export async function unlock(password: string, onProgress: OnProgress): Promise<Resumed> {
  const name = currentAccount();
  const state = name && isAccountDbName(name) ? await readSaved(name) : undefined;
  if (!name || !isLocked(state)) return resume();
  const { opts, bindTrust } = await messengerOptions(state.nick);
  let m: Messenger;
  try {
    m = await Messenger.unlock(opts, state, password, onProgress);
  } catch (e) {
    if (isSdkError(e, 'unauthenticated')) {
      await dropSaved(name);
      setCurrentAccount(null);
      return { session: null, ended: true, nick: state.nick, deviceReady: false };
    }
    throw e;
  }
  if ((await accountDbName(m.indexKey)) !== name) throw new Error('This password opens another account than the one locked here.');
  const { session, deviceReady } = await open(m, bindTrust, true);
  await restoreChats(session);
  return { session, ended: false, nick: state.nick, deviceReady };
}

/** "Sign out" on the lock screen: ends the service session and forgets the saved session. */
export async function signOutLocked(): Promise<void> {
  const name = currentAccount();
  await new ApiClient().logout().catch(() => undefined);
  if (name && isAccountDbName(name)) await dropSaved(name).catch(() => undefined);
  setCurrentAccount(null);
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
  await s.m.changePassword(oldPassword, newPassword, { kdf: newAccountKdf() }, onProgress);
  await s.db.put(STORES.kv, s.m.exportSession(), SAVED);
  await rememberKdf(s.nick, s.m.kdf);
}

/** Deletes the account at the service, then everything this browser kept for it. */
export async function deleteAccount(s: Session, password: string, onProgress: OnProgress): Promise<void> {
  // The account's keys are gone once it is deleted; its device id is named by one of them.
  const indexKey = s.m.indexKey;
  await s.m.deleteAccount(password, onProgress);
  s.db.close();
  setCurrentAccount(null);
  await forgetDeviceId(indexKey, s.nick);
  await Db.destroy(s.db.name).catch(() => undefined);
}

/** This device was removed (here or elsewhere): a later sign-in registers a new one. */
export async function deviceGone(s: Session): Promise<void> {
  await forgetDeviceId(s.m.indexKey, s.nick);
  await forgetLocalKeys(s);
}
