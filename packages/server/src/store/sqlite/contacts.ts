/** Contacts of the SQLite store. Each function runs inside the caller's transaction. */
import { LIMITS, type Contact } from '@svc/protocol';
import type { Refusal } from '../types.js';
import type { Statements } from './statements.js';

/** The account's contacts in the order they were added; deleted accounts drop out. */
export function listContacts(q: Statements, nick: string): Contact[] {
  return q.all<Contact>(
    `SELECT c.peer AS nick, a.public_key AS publicKey, c.created_at AS createdAt FROM contacts c
     JOIN accounts a ON a.nick = c.peer WHERE c.nick = ? AND a.deleted_at IS NULL ORDER BY c.seq`,
    nick,
  );
}

export function addContact(
  q: Statements,
  nick: string,
  peer: string,
  now: number,
): { status: 'created' | 'exists'; publicKey: string } | Refusal<'unknown_user' | 'limit_reached'> {
  const acc = q.one<{ public_key: string }>('SELECT public_key FROM accounts WHERE nick = ? AND deleted_at IS NULL', peer);
  if (!acc) return { error: 'unknown_user' };
  if (q.one('SELECT 1 FROM contacts WHERE nick = ? AND peer = ?', nick, peer)) return { status: 'exists', publicKey: acc.public_key };
  const n = q.one<{ n: number }>('SELECT COUNT(*) AS n FROM contacts WHERE nick = ?', nick)!.n;
  if (n >= LIMITS.contactsPerAccount) return { error: 'limit_reached' };
  q.run('INSERT INTO contacts (nick, peer, created_at) VALUES (?, ?, ?)', nick, peer, now);
  return { status: 'created', publicKey: acc.public_key };
}

export function deleteContact(q: Statements, nick: string, peer: string): void {
  q.run('DELETE FROM contacts WHERE nick = ? AND peer = ?', nick, peer);
}
