/**
 * The locks that keep instances sharing one database from overrunning a limit or writing rows
 * for an account that is being deleted. Each takes its locks in sorted order, so two
 * transactions that need several never wait on each other in a ring.
 *
 * The send (`send_facts`, migration 4) takes the same locks in SQL: the live accounts as
 * liveAccounts does, the contacts locks as lockNicks does (nicks in byte order). A change of
 * order here needs a migration that changes it there too.
 */
import type { Sql } from './db.js';

/** Advisory lock namespaces: one per per-account limit that a count-then-insert must not overrun. */
/** `attachments` is taken in SQL by put_attachment_part (migrations 10 and 11), with the same numbers. */
export const LOCK = { devices: 1, contacts: 2, rooms: 3, attachments: 4 } as const;

/** Serialises count-then-insert for these accounts and one limit until the transaction ends. */
export async function lockNicks(q: Sql, ns: number, nicks: string[]): Promise<void> {
  for (const n of [...new Set(nicks)].sort()) await q.run('SELECT pg_advisory_xact_lock($1, hashtext($2))', [ns, n]);
}

/**
 * Shared-locks the rows of those `nicks` that are live accounts and returns them. Whoever adds
 * rows that name an account (membership, device, contact, queue entry) takes this lock; account
 * deletion takes the row FOR UPDATE, so it either waits for those rows and removes them, or runs
 * first and the other side finds the account gone.
 */
export async function liveAccounts(q: Sql, nicks: string[]): Promise<Set<string>> {
  if (nicks.length === 0) return new Set();
  const rows = await q.all<{ nick: string }>('SELECT nick FROM accounts WHERE nick = ANY($1) AND deleted_at IS NULL ORDER BY nick FOR SHARE', [
    [...new Set(nicks)],
  ]);
  return new Set(rows.map((r) => r.nick));
}
