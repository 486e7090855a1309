/**
 * Devices and their push subscriptions in the SQLite store. Each function runs inside the
 * caller's transaction; forgetting the rows it changes from the read caches is the caller's part
 * (index.ts).
 */
import { LIMITS } from '@svc/protocol';
import type { DeviceRecord, PushTarget, Refusal } from '../types.js';
import { placeholders, type Statements } from './statements.js';

interface DeviceRow {
  id: string;
  nick: string;
  created_at: number;
  last_seen_at: number | null;
  push: number;
}

const toDevice = (r: DeviceRow): DeviceRecord => ({
  id: r.id,
  nick: r.nick,
  createdAt: r.created_at,
  lastSeenAt: r.last_seen_at,
  push: r.push === 1,
});
const DEVICE_COLS = 'id, nick, created_at, last_seen_at, (push_endpoint IS NOT NULL) AS push';

export function addDevice(
  q: Statements,
  nick: string,
  id: string,
  now: number,
): { status: 'created' | 'exists'; device: DeviceRecord } | Refusal<'device_conflict' | 'limit_reached'> {
  const row = q.one<DeviceRow>(`SELECT ${DEVICE_COLS} FROM devices WHERE id = ?`, id);
  if (row) return row.nick === nick ? { status: 'exists', device: toDevice(row) } : { error: 'device_conflict' };
  const n = q.one<{ n: number }>('SELECT COUNT(*) AS n FROM devices WHERE nick = ?', nick)!.n;
  if (n >= LIMITS.devicesPerAccount) return { error: 'limit_reached' };
  q.run('INSERT INTO devices (id, nick, created_at) VALUES (?, ?, ?)', id, nick, now);
  return { status: 'created', device: { id, nick, createdAt: now, lastSeenAt: null, push: false } };
}

export function listDevices(q: Statements, nick: string): DeviceRecord[] {
  return q.all<DeviceRow>(`SELECT ${DEVICE_COLS} FROM devices WHERE nick = ? ORDER BY seq`, nick).map(toDevice);
}

export function deviceOwner(q: Statements, id: string): string | null {
  return q.one<{ nick: string }>('SELECT nick FROM devices WHERE id = ?', id)?.nick ?? null;
}

/** Removes the device row only; its queue is the caller's to drop. False when `nick` has no such device. */
export function deleteDevice(q: Statements, nick: string, id: string): boolean {
  return q.run('DELETE FROM devices WHERE id = ? AND nick = ?', id, nick).changes > 0;
}

export function setPushSubscription(q: Statements, deviceId: string, sub: { endpoint: string; p256dh: string; auth: string }): void {
  q.run(
    'UPDATE devices SET push_endpoint = ?, push_p256dh = ?, push_auth = ?, push_pending = 0 WHERE id = ?',
    sub.endpoint,
    sub.p256dh,
    sub.auth,
    deviceId,
  );
}

export function deletePushSubscription(q: Statements, deviceId: string): void {
  q.run('UPDATE devices SET push_endpoint = NULL, push_p256dh = NULL, push_auth = NULL, push_pending = 0 WHERE id = ?', deviceId);
}

/** A connected device gets its events on the stream: the next push to it may go again. */
export function deviceConnected(q: Statements, deviceId: string, now: number): void {
  q.run('UPDATE devices SET push_pending = 0, last_seen_at = ? WHERE id = ?', now, deviceId);
}

export function claimPush(q: Statements, deviceIds: string[]): PushTarget[] {
  // One UPDATE … RETURNING: the flag is read and set in a single atomic step.
  return q.all<PushTarget>(
    `UPDATE devices SET push_pending = 1
     WHERE id IN (${placeholders(deviceIds.length)}) AND push_pending = 0 AND push_endpoint IS NOT NULL
     RETURNING id AS deviceId, push_endpoint AS endpoint, push_p256dh AS p256dh, push_auth AS auth`,
    ...deviceIds,
  );
}

/** Only while the subscription is still the one that failed: a new one set meanwhile stays. */
export function dropPushSubscription(q: Statements, deviceId: string, endpoint: string): void {
  q.run(
    'UPDATE devices SET push_endpoint = NULL, push_p256dh = NULL, push_auth = NULL, push_pending = 0 WHERE id = ? AND push_endpoint = ?',
    deviceId,
    endpoint,
  );
}
