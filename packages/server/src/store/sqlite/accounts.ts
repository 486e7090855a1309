/**
 * Accounts, invites and sessions of the SQLite store. Each function runs inside the caller's
 * transaction; forgetting the rows it changes from the read caches is the caller's part (index.ts).
 */
import type { EncryptedKey, Kdf } from '@svc/protocol';
import { ACCOUNT_COLUMNS, accountFromRow, type AccountRow } from '../rows.js';
import type { AccountRecord, DeleteAccountResult, InviteRecord, LeaveResult, NewAccount, Refusal, SessionRecord } from '../types.js';
import type { Statements } from './statements.js';
import * as rooms from './rooms.js';

export function registerAccount(q: Statements, a: NewAccount): { ok: true } | Refusal<'nick_taken' | 'invite_required' | 'invalid_invite'> {
  if (a.requireInvite) {
    if (a.invite === null) return { error: 'invite_required' };
    const inv = q.one<{ uses_left: number; expires_at: number | null }>('SELECT uses_left, expires_at FROM invites WHERE code = ?', a.invite);
    if (!inv || inv.uses_left <= 0 || (inv.expires_at !== null && inv.expires_at <= a.now)) return { error: 'invalid_invite' };
  }
  if (q.one('SELECT 1 FROM accounts WHERE nick = ?', a.nick)) return { error: 'nick_taken' };
  // The invite use is consumed in the same transaction that creates the account.
  if (a.requireInvite) q.run('UPDATE invites SET uses_left = uses_left - 1 WHERE code = ?', a.invite);
  q.run(
    'INSERT INTO accounts (nick, auth_key_hash, kdf, public_key, encrypted_key, created_at) VALUES (?, ?, ?, ?, ?, ?)',
    a.nick,
    Buffer.from(a.authKeyHash),
    JSON.stringify(a.kdf),
    a.publicKey,
    JSON.stringify(a.encryptedKey),
    a.now,
  );
  createSession(q, { id: a.sessionId, nick: a.nick, now: a.now });
  return { ok: true };
}

export function getAccount(q: Statements, nick: string): AccountRecord | null {
  const r = q.one<AccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE nick = ? AND deleted_at IS NULL`, nick);
  if (!r) return null;
  return accountFromRow(r);
}

/** Deleted accounts count too: their nicks are retired. */
export function nickExists(q: Statements, nick: string): boolean {
  return q.one('SELECT 1 FROM accounts WHERE nick = ?', nick) !== undefined;
}

/** Stores new key material and ends every session but `keepSession`; returns the ended ids. */
export function changePassword(
  q: Statements,
  nick: string,
  p: { authKeyHash: Uint8Array; kdf: Kdf; encryptedKey: EncryptedKey },
  keepSession: string,
): string[] {
  q.run(
    'UPDATE accounts SET auth_key_hash = ?, kdf = ?, encrypted_key = ? WHERE nick = ?',
    Buffer.from(p.authKeyHash),
    JSON.stringify(p.kdf),
    JSON.stringify(p.encryptedKey),
    nick,
  );
  const ended = q.all<{ id: string }>('SELECT id FROM sessions WHERE nick = ? AND id <> ?', nick, keepSession).map((r) => r.id);
  q.run('DELETE FROM sessions WHERE nick = ? AND id <> ?', nick, keepSession);
  return ended;
}

/**
 * Leaves every room, ends every session, removes the devices (and, through `dropQueue`, their
 * queues) and the contacts of both directions, and keeps the account row without its keys so the
 * nick stays retired.
 */
export function deleteAccount(q: Statements, nick: string, now: number, dropQueue: (deviceId: string) => void): DeleteAccountResult {
  const roomResults: LeaveResult[] = rooms.roomsOf(q, nick).map((id) => rooms.leaveRoom(q, id, nick));
  const sessions = q.all<{ id: string }>('SELECT id FROM sessions WHERE nick = ?', nick).map((r) => r.id);
  const devices = rooms.devicesOf(q, nick);
  q.run('DELETE FROM sessions WHERE nick = ?', nick);
  for (const d of devices) dropQueue(d);
  q.run('DELETE FROM devices WHERE nick = ?', nick);
  q.run('DELETE FROM contacts WHERE nick = ? OR peer = ?', nick, nick);
  q.run('UPDATE accounts SET auth_key_hash = NULL, kdf = NULL, public_key = NULL, encrypted_key = NULL, deleted_at = ? WHERE nick = ?', now, nick);
  return { sessions, devices, rooms: roomResults };
}

export function createInvite(q: Statements, code: string, uses: number, expiresAt: number | null, now: number): void {
  q.run('INSERT INTO invites (code, uses_left, expires_at, created_at) VALUES (?, ?, ?, ?)', code, uses, expiresAt, now);
}

export function listInvites(q: Statements): InviteRecord[] {
  return q.all<InviteRecord>(
    'SELECT code, uses_left AS usesLeft, expires_at AS expiresAt, created_at AS createdAt FROM invites ORDER BY created_at, code',
  );
}

export function revokeInvite(q: Statements, code: string): boolean {
  return q.run('DELETE FROM invites WHERE code = ?', code).changes > 0;
}

export function createSession(q: Statements, s: { id: string; nick: string; now: number }): void {
  q.run('INSERT INTO sessions (id, nick, created_at, last_used_at) VALUES (?, ?, ?, ?)', s.id, s.nick, s.now, s.now);
}

export function loadSession(q: Statements, id: string): SessionRecord | null {
  const r = q.one<{ id: string; nick: string; created_at: number; last_used_at: number }>(
    'SELECT id, nick, created_at, last_used_at FROM sessions WHERE id = ?',
    id,
  );
  return r ? { id: r.id, nick: r.nick, createdAt: r.created_at, lastUsedAt: r.last_used_at } : null;
}

export function touchSession(q: Statements, id: string, now: number): void {
  q.run('UPDATE sessions SET last_used_at = ? WHERE id = ?', now, id);
}

export function deleteSession(q: Statements, id: string): void {
  q.run('DELETE FROM sessions WHERE id = ?', id);
}
