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
import { newAccountKdf } from './kdf/new-account-kdf.js';
import { workerArgon2 } from './kdf/worker-argon2.js';
import { Session } from './session.js';

/** The kv key of the saved session. A save the SDK cannot resume (bad_session) asks for the password once. */
const SAVED = 'identity';

async function messengerOptions(nick?: string): Promise<{ opts: MessengerOptions; bindTrust: (session: Session) => void }> {
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

async function newMessenger(nick?: string): Promise<{ messenger: Messenger; bindTrust: (session: Session) => void }> {
  const { opts, bindTrust } = await messengerOptions(nick);
  return { messenger: new Messenger(opts), bindTrust };
}

/** Whether a failed request says only that the service is out of reach (or down) for now. */
function unreachable(error: unknown): boolean {
  return isSdkError(error, 'network') || isSdkError(error, 'internal') || isSdkError(error, 'bad_response') || isSdkError(error, 'rate_limited');
}

/**
 * Registers this browser's device (idempotent). A resume or an unlock (`mayWait`) does not wait
 * for the service: the device is only named here, and the connection registers it before the
 * event stream opens (connection.ts), so the stored chats show without a round trip, offline too.
 * Returns whether it is registered.
 */
async function registerDevice(messenger: Messenger, deviceId: string, mayWait: boolean): Promise<boolean> {
  if (mayWait) {
    messenger.api.setDevice(deviceId);
    return false;
  }
  await messenger.ensureDevice(deviceId);
  return true;
}

/**
 * Opens the account's database and Session. `resuming`: the saved session was read before this
 * began, and another tab may have locked the app since; the saved session is then written again
 * only if it is still unlocked, in one transaction with that look, and a lock found there wins
 * (null: the caller shows the lock screen). A sign-in, a sign-up or an unlock writes it whole.
 */
async function open(
  messenger: Messenger,
  bindTrust: (session: Session) => void,
  o: { mayWait?: boolean; resuming?: boolean } = {},
): Promise<{ session: Session; deviceReady: boolean } | null> {
  const name = await accountDbName(messenger.indexKey);
  const db = await Db.open(name);
  try {
    await moveLegacy(messenger, db);
    if (o.resuming && !(await db.putUnless(STORES.kv, SAVED, messenger.exportSession(), isLocked))) {
      db.close();
      return null;
    }
  } catch (error) {
    db.close();
    throw error;
  }
  const deviceId = await deviceIdFor(messenger.indexKey, messenger.nick);
  const deviceReady = await registerDevice(messenger, deviceId, o.mayWait ?? false);
  const session = new Session(messenger, db, deviceId);
  bindTrust(session);
  await session.load();
  if (!o.resuming) await db.put(STORES.kv, messenger.exportSession(), SAVED);
  setCurrentAccount(name);
  await rememberKdf(messenger.nick, messenger.kdf);
  return { session, deviceReady };
}

/** A sign-up, sign-in or unlock opens the account whatever was saved: only a resume yields to a lock. */
async function openWhole(messenger: Messenger, bindTrust: (session: Session) => void, mayWait = false) {
  return (await open(messenger, bindTrust, { mayWait }))!;
}

export async function signUp(credentials: { nick: string; password: string; invite?: string }, onProgress: OnProgress): Promise<Session> {
  const { messenger, bindTrust } = await newMessenger();
  await messenger.register(
    { nick: credentials.nick, password: credentials.password, ...(credentials.invite ? { invite: credentials.invite } : {}), kdf: newAccountKdf() },
    onProgress,
  );
  return (await openWhole(messenger, bindTrust)).session;
}

/** `acceptWeakKdf`: the person read the warning of a `kdf_weak` refusal and goes on anyway (only offered when this browser never saw the account). */
export async function signIn(credentials: { nick: string; password: string; acceptWeakKdf?: boolean }, onProgress: OnProgress): Promise<Session> {
  const { messenger, bindTrust } = await newMessenger(credentials.nick);
  await messenger.login(credentials, onProgress);
  const { session } = await openWhole(messenger, bindTrust);
  session.askHistory = await isNewDevice(session);
  return session;
}

/**
 * A sign-in on a device that holds no history of the account, while the account has another
 * device: that one may send the history (docs/WEB.md). A resume never asks.
 */
async function isNewDevice(session: Session): Promise<boolean> {
  if ((await session.db.count(STORES.messages)) > 0) return false;
  const devices = await session.devices().catch(() => []);
  return devices.some((d) => d.id !== session.deviceId);
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

/** Runs `work` on the `kv` store of a database that exists, without creating or upgrading it. */
async function withKv<T>(name: string, mode: IDBTransactionMode, work: (kv: IDBObjectStore) => Promise<T>): Promise<T | undefined> {
  const db = await openExisting(name);
  if (!db) return undefined;
  try {
    return db.objectStoreNames.contains(STORES.kv) ? await work(db.transaction(STORES.kv, mode).objectStore(STORES.kv)) : undefined;
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
  let messenger: Messenger;
  try {
    // Local only (no request); the SDK's test session.test.ts holds it to that.
    messenger = await Messenger.resume(opts, state);
    if (navigator.onLine) {
      await messenger.api.me().catch((error: unknown) => {
        if (!unreachable(error)) throw error;
      });
    }
  } catch (error) {
    // The service ended the session, or the saved one is not usable: ask for the password.
    if (isSdkError(error, 'unauthenticated') || isSdkError(error, 'bad_session')) {
      await dropSaved(name);
      setCurrentAccount(null);
      return { ...none, ended: isSdkError(error, 'unauthenticated') };
    }
    throw error;
  }
  // A database holding another account's session is not this account's history.
  if (legacyNick === null && (await accountDbName(messenger.indexKey)) !== name) return none;
  const opened = await open(messenger, bindTrust, { mayWait: true, resuming: true });
  // Another tab locked the app while this one resumed: the lock stands.
  if (!opened) return { ...none, locked: true };
  const { session, deviceReady } = opened;
  await restoreChats(session);
  return { session, ended: false, nick, deviceReady };
}

/**
 * Locks the app: the saved session loses its private key (the rest stays, so the password opens
 * it again without a new login) and the database closes; the caller drops the Session, and with it
 * every key in memory. A reload while locked asks for the password.
 */
export async function lock(session: Session): Promise<void> {
  const { privateKey: _dropped, ...rest } = session.messenger.exportSession();
  const locked: LockedState = { ...rest, locked: true };
  try {
    // What the search index has not written yet would otherwise be built again after the unlock.
    await session.flushSearch().catch((e: unknown) => console.warn('search index:', e));
    await session.db.put(STORES.kv, locked, SAVED);
  } finally {
    session.db.close();
  }
}

/** Another tab locked the account (the saved session lost its key there): this tab lets go of the database. */
export function lockedElsewhere(session: Session): void {
  session.db.close();
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
  let messenger: Messenger;
  try {
    messenger = await Messenger.unlock(opts, state, password, onProgress);
  } catch (error) {
    if (isSdkError(error, 'unauthenticated')) {
      await dropSaved(name);
      setCurrentAccount(null);
      return { session: null, ended: true, nick: state.nick, deviceReady: false };
    }
    throw error;
  }
  if ((await accountDbName(messenger.indexKey)) !== name) throw new Error('This password opens another account than the one locked here.');
  const { session, deviceReady } = await openWhole(messenger, bindTrust, true);
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
export async function forgetLocalKeys(session: Session): Promise<void> {
  await session.db.delete(STORES.kv, SAVED).catch(() => undefined);
  setCurrentAccount(null);
  session.db.close();
}

export async function signOut(session: Session): Promise<void> {
  try {
    await session.messenger.logout();
  } finally {
    await forgetLocalKeys(session);
  }
}

export async function changePassword(session: Session, oldPassword: string, newPassword: string, onProgress: OnProgress): Promise<void> {
  await session.messenger.changePassword(oldPassword, newPassword, { kdf: newAccountKdf() }, onProgress);
  await session.db.put(STORES.kv, session.messenger.exportSession(), SAVED);
  await rememberKdf(session.nick, session.messenger.kdf);
}

/** Deletes the account at the service, then everything this browser kept for it. */
export async function deleteAccount(session: Session, password: string, onProgress: OnProgress): Promise<void> {
  // The account's keys are gone once it is deleted; its device id is named by one of them.
  const indexKey = session.messenger.indexKey;
  await session.messenger.deleteAccount(password, onProgress);
  session.db.close();
  setCurrentAccount(null);
  await forgetDeviceId(indexKey, session.nick);
  await Db.destroy(session.db.name).catch(() => undefined);
}

/** This device was removed (here or elsewhere): a later sign-in registers a new one. */
export async function deviceGone(session: Session): Promise<void> {
  await forgetDeviceId(session.messenger.indexKey, session.nick);
  await forgetLocalKeys(session);
}
