/**
 * The account's steps with the service, for Messenger (messenger.ts): sign-up, sign-in and what a
 * sign-in refuses, unlocking a saved session, a new password, deletion. Each returns what Messenger
 * keeps and holds no state; the crypto of each step (what a password makes) is credentials.ts.
 * And the keys a signed-in account derives from its identity.
 */
import type { Kdf } from '@svc/protocol';
import type { ApiClient } from './api.js';
import { deriveHistoryKey } from './crypto/atrest.js';
import { deriveIndexKey } from './crypto/atrest-index.js';
import { deriveOwnKey, INFO_EXPORT, INFO_TRANSFER } from './crypto/ownkeys.js';
import type { Identity } from './crypto/identity.js';
import { checkKdf, type Argon2Fn, type OnProgress } from './crypto/kdf.js';
import { keysFor, newAccount, openAccount, resealAccount, type KdfChoice } from './credentials.js';
import { SdkError } from './errors.js';

/** An account opened by a password: Messenger derives the rest of its keys from the identity. */
export interface OpenedAccount {
  nick: string;
  identity: Identity;
  /** The parameters the password was derived with (never what a later answer claims). */
  kdf: Kdf;
}

/** The keys Messenger derives from the identity: the same on all devices and across password changes. */
export interface AccountKeys {
  historyKey: CryptoKey;
  indexKey: CryptoKey;
  transferKey: CryptoKey;
  exportKey: CryptoKey;
}

export async function deriveAccountKeys(identity: Identity): Promise<AccountKeys> {
  const [historyKey, indexKey, transferKey, exportKey] = await Promise.all([
    deriveHistoryKey(identity),
    deriveIndexKey(identity),
    deriveOwnKey(identity, INFO_TRANSFER),
    deriveOwnKey(identity, INFO_EXPORT),
  ]);
  return { historyKey, indexKey, transferKey, exportKey };
}

/** Whether a login answer's `kdf` names exactly the parameters the password was derived with. */
function sameKdf(used: Kdf, answered: unknown): boolean {
  if (typeof answered !== 'object' || answered === null) return false;
  const a = answered as Record<string, unknown>;
  return a.alg === used.alg && a.salt === used.salt && a.m === used.m && a.t === used.t && a.p === used.p;
}

/** Creates the account (and its session) with a new identity sealed under the password. */
export async function signUp(
  api: ApiClient,
  argon2: Argon2Fn | undefined,
  o: { nick: string; password: string; invite?: string; kdf?: KdfChoice },
  onProgress?: OnProgress,
): Promise<OpenedAccount> {
  const a = await newAccount(o.nick, o.password, o.kdf, argon2, onProgress);
  onProgress?.('contacting_service');
  await api.register({
    nick: o.nick,
    authKey: a.keys.authKey,
    kdf: a.kdf,
    publicKey: a.identity.publicKey,
    encryptedKey: a.encryptedKey,
    ...(o.invite !== undefined ? { invite: o.invite } : {}),
  });
  return { nick: o.nick, identity: a.identity, kdf: a.kdf };
}

/**
 * Fetches and checks the KDF parameters (refusing work below `kdfFloor` unless `acceptWeakKdf`),
 * derives the keys, logs in and opens the identity the service returns.
 */
export async function signIn(
  api: ApiClient,
  argon2: Argon2Fn | undefined,
  kdfFloor: Pick<Kdf, 'm' | 't'>,
  o: { nick: string; password: string; acceptWeakKdf?: boolean },
  onProgress?: OnProgress,
): Promise<OpenedAccount> {
  onProgress?.('fetching_params');
  const kdf = checkKdf(await api.kdf(o.nick));
  if ((kdf.m < kdfFloor.m || kdf.t < kdfFloor.t) && !o.acceptWeakKdf) {
    throw new SdkError('kdf_weak', {
      message: `The service asks for a weaker key derivation for ${o.nick} (m=${kdf.m} KiB, t=${kdf.t}) than expected (m=${kdfFloor.m} KiB, t=${kdfFloor.t}). This can mean someone is trying to make your password easier to guess. Nothing was sent.`,
    });
  }
  const keys = await keysFor(o.password, kdf, argon2, onProgress);
  onProgress?.('contacting_service');
  // A login overwrites the cookie without ending the old session; end it first (401 = none).
  await api.logout();
  const res = await api.login({ nick: o.nick, authKey: keys.authKey });
  // A service that answers with another account than the one typed is not followed.
  if (res.nick !== o.nick)
    throw new SdkError('bad_response', { message: `The service answered the sign-in of ${o.nick} with another account; nothing was opened.` });
  // The parameters that opened the account are the ones kept: an answer naming others (huge ones
  // would make this browser's floor lock the account out, and later derivations go wrong) is refused.
  if (!sameKdf(kdf, res.kdf)) {
    await api.logout().catch(() => undefined);
    throw new SdkError('bad_response', {
      message: `The service answered the sign-in of ${o.nick} with other key-derivation parameters than it gave for deriving the password; nothing was opened or stored.`,
    });
  }
  onProgress?.('opening_identity');
  const identity = await openAccount(keys, res.encryptedKey, res.nick, res.publicKey);
  return { nick: res.nick, identity, kdf };
}

/**
 * Opens the identity the service keeps for the session (GET /api/me) with the password, derived
 * under the saved KDF parameters; for Messenger.unlock, which documents what it refuses.
 */
export async function unlockAccount(
  api: ApiClient,
  argon2: Argon2Fn | undefined,
  state: { nick: string; publicKey: string; kdf: Kdf },
  password: string,
  onProgress?: OnProgress,
): Promise<OpenedAccount> {
  const kdf = checkKdf(state.kdf);
  onProgress?.('contacting_service');
  const me = await api.me();
  if (me.nick !== state.nick || me.publicKey !== state.publicKey)
    throw new SdkError('bad_response', { message: `The service answered for another account or key than ${state.nick}'s; nothing was opened.` });
  const keys = await keysFor(password, kdf, argon2, onProgress);
  onProgress?.('opening_identity');
  const identity = await openAccount(keys, me.encryptedKey, state.nick, state.publicKey);
  return { nick: state.nick, identity, kdf };
}

/**
 * Seals the same identity under a new password and sends it; returns the new KDF parameters. The
 * old password is derived with `usedKdf`, the parameters this device signed in with, not with
 * what GET /api/me answers now.
 */
export async function newPassword(
  api: ApiClient,
  argon2: Argon2Fn | undefined,
  nick: string,
  usedKdf: Kdf,
  o: { oldPassword: string; newPassword: string; kdf?: KdfChoice },
  onProgress?: OnProgress,
): Promise<Kdf> {
  const current = await api.me();
  const r = await resealAccount(
    {
      nick,
      oldPassword: o.oldPassword,
      oldKdf: checkKdf(usedKdf),
      encryptedKey: current.encryptedKey,
      newPassword: o.newPassword,
      ...(o.kdf ? { choice: o.kdf } : {}),
    },
    argon2,
    onProgress,
  );
  onProgress?.('contacting_service');
  await api.changePassword(r);
  return r.kdf;
}

/** Deletes the account with the auth key derived again from the password under `kdf` (the parameters of the sign-in). */
export async function deleteAccount(
  api: ApiClient,
  argon2: Argon2Fn | undefined,
  kdf: Kdf,
  password: string,
  onProgress?: OnProgress,
): Promise<void> {
  const keys = await keysFor(password, kdf, argon2, onProgress);
  onProgress?.('contacting_service');
  await api.deleteMe(keys.authKey);
}
