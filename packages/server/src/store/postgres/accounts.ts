/** Accounts, invites and sessions of the PostgreSQL store. Functions given a Sql run in the caller's transaction. */
import { ACCOUNT_COLUMNS, accountFromRow, type AccountRow } from '../rows.js';
import type { EncryptedKey, Kdf } from '@svc/protocol';
import type { AccountRecord, DeleteAccountResult, LeaveResult, NewAccount, Refusal } from '../types.js';
import type { Sql } from './db.js';
import * as rooms from './rooms.js';

export async function registerAccount(q: Sql, a: NewAccount): Promise<{ ok: true } | Refusal<'nick_taken' | 'invite_required' | 'invalid_invite'>> {
  if (a.requireInvite) {
    if (a.invite === null) return { error: 'invite_required' };
    // FOR UPDATE: two registrations on the last use of a code run one after the other, and the
    // second sees the use already consumed.
    const inv = await q.one<{ uses_left: number; expires_at: number | null }>(
      'SELECT uses_left, expires_at FROM invites WHERE code = $1 FOR UPDATE',
      [a.invite],
    );
    if (!inv || inv.uses_left <= 0 || (inv.expires_at !== null && inv.expires_at <= a.now)) return { error: 'invalid_invite' };
  }
  // The primary key decides between two registrations of one nick; a retired nick conflicts too.
  const inserted = await q.run(
    `INSERT INTO accounts (nick, auth_key_hash, kdf, public_key, encrypted_key, created_at) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (nick) DO NOTHING`,
    [a.nick, Buffer.from(a.authKeyHash), JSON.stringify(a.kdf), a.publicKey, JSON.stringify(a.encryptedKey), a.now],
  );
  if (inserted === 0) return { error: 'nick_taken' };
  // The invite use is consumed in the same transaction that creates the account.
  if (a.requireInvite) await q.run('UPDATE invites SET uses_left = uses_left - 1 WHERE code = $1', [a.invite]);
  await q.run('INSERT INTO sessions (id, nick, created_at, last_used_at) VALUES ($1, $2, $3, $3)', [a.sessionId, a.nick, a.now]);
  return { ok: true };
}

export async function getAccount(q: Sql, nick: string): Promise<AccountRecord | null> {
  const r = await q.one<AccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE nick = $1 AND deleted_at IS NULL`, [nick]);
  if (!r) return null;
  return accountFromRow(r);
}

export async function changePassword(
  q: Sql,
  nick: string,
  p: { authKeyHash: Uint8Array; kdf: Kdf; encryptedKey: EncryptedKey },
  keepSession: string,
): Promise<string[]> {
  await q.run('UPDATE accounts SET auth_key_hash = $2, kdf = $3, encrypted_key = $4 WHERE nick = $1', [
    nick,
    Buffer.from(p.authKeyHash),
    JSON.stringify(p.kdf),
    JSON.stringify(p.encryptedKey),
  ]);
  const rows = await q.all<{ id: string }>('DELETE FROM sessions WHERE nick = $1 AND id <> $2 RETURNING id', [nick, keepSession]);
  return rows.map((r) => r.id);
}

export async function deleteAccount(q: Sql, nick: string, now: number): Promise<DeleteAccountResult> {
  // First the account row FOR UPDATE: whoever is adding a membership, device, contact or queue
  // entry for this account holds it shared, so from here on nothing new can name the account.
  await q.run('SELECT 1 FROM accounts WHERE nick = $1 FOR UPDATE', [nick]);
  // Then its rooms, all of them before it leaves any (see lockRoomsOf); the list read after the
  // locks is the one to leave, as nothing can add the account to a room any more.
  await rooms.lockRoomsOf(q, nick);
  const roomResults: LeaveResult[] = [];
  for (const id of await rooms.roomsOf(q, nick)) roomResults.push(await rooms.leaveRoom(q, id, nick));
  const sessions = (await q.all<{ id: string }>('DELETE FROM sessions WHERE nick = $1 RETURNING id', [nick])).map((r) => r.id);
  // Device rows are locked in id order, the order every sender locks them in.
  await q.run('SELECT 1 FROM devices WHERE nick = $1 ORDER BY id FOR UPDATE', [nick]);
  const devices = await rooms.devicesOf(q, nick);
  if (devices.length > 0) await q.run('DELETE FROM queue WHERE device_id = ANY($1)', [devices]);
  await q.run('DELETE FROM devices WHERE nick = $1', [nick]);
  await q.run('DELETE FROM contacts WHERE nick = $1 OR peer = $1', [nick]);
  await q.run('UPDATE accounts SET auth_key_hash = NULL, kdf = NULL, public_key = NULL, encrypted_key = NULL, deleted_at = $2 WHERE nick = $1', [
    nick,
    now,
  ]);
  return { sessions, devices, rooms: roomResults };
}

/** Sessions unused for longer than the idle limit end; their ids go back so their streams close. */
export async function purgeSessions(q: Sql, cutoff: number): Promise<string[]> {
  return (await q.all<{ id: string }>('DELETE FROM sessions WHERE last_used_at < $1 RETURNING id', [cutoff])).map((r) => r.id);
}
