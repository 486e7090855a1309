/**
 * Row shapes both stores share (the two schemas name their columns alike), and their mapping to
 * the records of the Store interface, so the two implementations cannot drift apart on them.
 */
import type { EncryptedKey, Kdf } from '@svc/protocol';
import type { AccountRecord } from './types.js';

/** The columns of `accounts` that make an AccountRecord. */
export const ACCOUNT_COLUMNS = 'nick, auth_key_hash, kdf, public_key, encrypted_key, created_at';

export interface AccountRow {
  nick: string;
  auth_key_hash: Buffer;
  kdf: string;
  public_key: string;
  encrypted_key: string;
  created_at: number;
}

export function accountFromRow(r: AccountRow): AccountRecord {
  return {
    nick: r.nick,
    authKeyHash: new Uint8Array(r.auth_key_hash),
    kdf: JSON.parse(r.kdf) as Kdf,
    publicKey: r.public_key,
    encryptedKey: JSON.parse(r.encrypted_key) as EncryptedKey,
    createdAt: r.created_at,
  };
}
