/**
 * What a password makes, for the account's steps with the service (account.ts): the account keys
 * from the password and the KDF parameters, a new identity sealed for registration, the identity
 * opened at login, and the identity sealed again under a new password. Pure crypto, no requests;
 * every buffer that held the master secret or the private key is zeroed before it is let go.
 */
import type { EncryptedKey, Kdf } from '@svc/protocol';
import { generateIdentity, openIdentity, openIdentityPkcs8, sealIdentity, type Identity } from './crypto/identity.js';
import { deriveMaster, newKdf, type Argon2Fn, type OnProgress } from './crypto/kdf.js';
import { deriveAccountKeys, type AccountKeys } from './crypto/keys.js';

export type KdfChoice = Partial<Pick<Kdf, 'm' | 't' | 'p'>>;

/** authKey and the encryption key from the password under `kdf`. */
export async function keysFor(password: string, kdf: Kdf, argon2: Argon2Fn | undefined, onProgress?: OnProgress): Promise<AccountKeys> {
  const master = await deriveMaster(password, kdf, { argon2, onProgress });
  try {
    return await deriveAccountKeys(master);
  } finally {
    master.fill(0);
  }
}

/** A new account's material: fresh KDF parameters, its keys, and a new identity sealed under them. */
export async function newAccount(
  nick: string,
  password: string,
  choice: KdfChoice | undefined,
  argon2: Argon2Fn | undefined,
  onProgress?: OnProgress,
): Promise<{ kdf: Kdf; keys: AccountKeys; identity: Identity; encryptedKey: EncryptedKey }> {
  const kdf = newKdf(choice);
  const keys = await keysFor(password, kdf, argon2, onProgress);
  const identity = await generateIdentity();
  const encryptedKey = await sealIdentity(keys.encKey, identity, nick);
  identity.pkcs8.fill(0);
  return { kdf, keys, identity: { publicKey: identity.publicKey, privateKey: identity.privateKey }, encryptedKey };
}

/** The identity the service returned at login, opened with the password's encryption key. */
export async function openAccount(keys: AccountKeys, encryptedKey: EncryptedKey, nick: string, publicKey: string): Promise<Identity> {
  const identity = await openIdentity(keys.encKey, encryptedKey, nick, publicKey);
  identity.pkcs8.fill(0);
  return { publicKey: identity.publicKey, privateKey: identity.privateKey };
}

/**
 * The same identity sealed under a new password: the old password opens it (as the service holds
 * it), the new one gets fresh KDF parameters. Returns what POST /api/password needs.
 */
export async function resealAccount(
  o: { nick: string; oldPassword: string; oldKdf: Kdf; encryptedKey: EncryptedKey; newPassword: string; choice?: KdfChoice },
  argon2: Argon2Fn | undefined,
  onProgress?: OnProgress,
): Promise<{ authKey: string; newAuthKey: string; kdf: Kdf; encryptedKey: EncryptedKey }> {
  const oldKeys = await keysFor(o.oldPassword, o.oldKdf, argon2, onProgress);
  const pkcs8 = await openIdentityPkcs8(oldKeys.encKey, o.encryptedKey, o.nick);
  const kdf = newKdf(o.choice);
  try {
    const newKeys = await keysFor(o.newPassword, kdf, argon2, onProgress);
    const encryptedKey = await sealIdentity(newKeys.encKey, { pkcs8 }, o.nick);
    return { authKey: oldKeys.authKey, newAuthKey: newKeys.authKey, kdf, encryptedKey };
  } finally {
    pkcs8.fill(0);
  }
}
