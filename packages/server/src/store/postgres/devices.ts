/** Devices, push subscriptions and contacts of the PostgreSQL store. Functions run in the caller's transaction. */
import { LIMITS, type Contact } from '@svc/protocol';
import type { DeviceRecord, PushTarget, Refusal } from '../types.js';
import type { Sql } from './db.js';
import { LOCK, liveAccounts, lockNicks } from './locks.js';

interface DeviceRow {
  id: string;
  nick: string;
  created_at: number;
  last_seen_at: number | null;
  push: boolean;
}

const toDevice = (r: DeviceRow): DeviceRecord => ({ id: r.id, nick: r.nick, createdAt: r.created_at, lastSeenAt: r.last_seen_at, push: r.push });
const DEVICE_COLS = 'id, nick, created_at, last_seen_at, (push_endpoint IS NOT NULL) AS push';

export async function addDevice(
  q: Sql,
  nick: string,
  id: string,
  now: number,
): Promise<{ status: 'created' | 'exists'; device: DeviceRecord } | Refusal<'device_conflict' | 'limit_reached'>> {
  await liveAccounts(q, [nick]);
  // Adds for one account run one at a time, so the count below cannot be overrun and a second
  // add of the same id by the same account sees the first one as existing.
  await lockNicks(q, LOCK.devices, [nick]);
  const row = await q.one<DeviceRow>(`SELECT ${DEVICE_COLS} FROM devices WHERE id = $1`, [id]);
  if (row) return row.nick === nick ? { status: 'exists', device: toDevice(row) } : { error: 'device_conflict' };
  const n = (await q.one<{ n: number }>('SELECT COUNT(*) AS n FROM devices WHERE nick = $1', [nick]))!.n;
  if (n >= LIMITS.devicesPerAccount) return { error: 'limit_reached' };
  // Another account may be adding the same id right now: the unique index picks one winner.
  const inserted = await q.run('INSERT INTO devices (id, nick, created_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING', [id, nick, now]);
  if (inserted === 0) return { error: 'device_conflict' };
  return { status: 'created', device: { id, nick, createdAt: now, lastSeenAt: null, push: false } };
}

export async function listDevices(q: Sql, nick: string): Promise<DeviceRecord[]> {
  return (await q.all<DeviceRow>(`SELECT ${DEVICE_COLS} FROM devices WHERE nick = $1 ORDER BY seq`, [nick])).map(toDevice);
}

export async function deleteDevice(q: Sql, nick: string, id: string): Promise<boolean> {
  // The DELETE waits for the sends that hold the row FOR KEY SHARE (migration 5): they finish
  // first, and their queue rows are then visible to the queue DELETE (a new statement, a new
  // snapshot); a send that comes later does not find the device.
  if ((await q.run('DELETE FROM devices WHERE id = $1 AND nick = $2', [id, nick])) === 0) return false;
  await q.run('DELETE FROM queue WHERE device_id = $1', [id]);
  return true;
}

export async function claimPush(q: Sql, deviceIds: string[]): Promise<PushTarget[]> {
  // One UPDATE: a row another claim has just flagged is re-checked after its lock is released
  // and no longer matches, so each device is claimed once. Rows are locked in id order, FOR NO
  // KEY UPDATE, which does not wait for the sends that share them (migration 5).
  return q.all<PushTarget>(
    `UPDATE devices SET push_pending = TRUE
     WHERE id IN (SELECT id FROM devices WHERE id = ANY($1) AND NOT push_pending AND push_endpoint IS NOT NULL ORDER BY id FOR NO KEY UPDATE)
       AND NOT push_pending AND push_endpoint IS NOT NULL
     RETURNING id AS "deviceId", push_endpoint AS endpoint, push_p256dh AS p256dh, push_auth AS auth`,
    [deviceIds],
  );
}

export async function listContacts(q: Sql, nick: string): Promise<Contact[]> {
  return q.all<Contact>(
    `SELECT c.peer AS nick, a.public_key AS "publicKey", c.created_at AS "createdAt" FROM contacts c
     JOIN accounts a ON a.nick = c.peer WHERE c.nick = $1 AND a.deleted_at IS NULL ORDER BY c.seq`,
    [nick],
  );
}

export async function addContact(
  q: Sql,
  nick: string,
  peer: string,
  now: number,
): Promise<{ status: 'created' | 'exists'; publicKey: string } | Refusal<'unknown_user' | 'limit_reached'>> {
  const live = await liveAccounts(q, [nick, peer]);
  if (!live.has(peer)) return { error: 'unknown_user' };
  const publicKey = (await q.one<{ public_key: string }>('SELECT public_key FROM accounts WHERE nick = $1', [peer]))!.public_key;
  await lockNicks(q, LOCK.contacts, [nick]);
  if (await q.one('SELECT 1 FROM contacts WHERE nick = $1 AND peer = $2', [nick, peer])) return { status: 'exists', publicKey };
  const n = (await q.one<{ n: number }>('SELECT COUNT(*) AS n FROM contacts WHERE nick = $1', [nick]))!.n;
  if (n >= LIMITS.contactsPerAccount) return { error: 'limit_reached' };
  // A first DM may add the same row at the same moment: then the row exists either way.
  const inserted = await q.run('INSERT INTO contacts (nick, peer, created_at) VALUES ($1, $2, $3) ON CONFLICT (nick, peer) DO NOTHING', [
    nick,
    peer,
    now,
  ]);
  return { status: inserted === 0 ? 'exists' : 'created', publicKey };
}
