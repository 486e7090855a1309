/**
 * Message operations of the PostgreSQL store: the send fan-out, acks, replay and retention.
 *
 * Every change to a device's queue (enqueue, cap drop, ack, purge, device deletion) holds that
 * device's row lock, taken in id order. So queue_len stays exact, and a device's entries commit
 * in the order of their seq: a replay that pages by seq never skips an entry committed later.
 */
import { LIMITS, type Envelope, type Target } from '@svc/protocol';
import type { QueuedEntry, Refusal, SendInput, SendResult, SendTarget } from '../types.js';
import type { Sql } from './db.js';
import { isMember } from './rooms.js';
import { addContactIfRoom } from './devices.js';
import { LOCK, liveAccounts, lockNicks } from './locks.js';

/** Envelope JSON in the field order of interface.md: id, to, from, keyId, iv, ct, ts. */
export function envelopeJson(e: Envelope): string {
  return JSON.stringify({ id: e.id, to: e.to, from: e.from, keyId: e.keyId, iv: e.iv, ct: e.ct, ts: e.ts });
}

/**
 * Rights of message step 5. With `lock` (inside the send transaction) the room row or the two
 * accounts are share-locked, so a concurrent members change, leave, room or account deletion
 * lands wholly before or wholly after this send.
 */
export async function checkSend(
  q: Sql,
  from: string,
  to: Target,
  keyId: string,
  lock = false,
): Promise<Refusal<'not_member' | 'unknown_key' | 'unknown_user' | 'self'> | null> {
  if ('room' in to) {
    if (lock) await q.run('SELECT 1 FROM rooms WHERE id = $1 FOR SHARE', [to.room]);
    if (!(await isMember(q, to.room, from))) return { error: 'not_member' };
    if (!(await q.one('SELECT 1 FROM room_key_ids WHERE room_id = $1 AND key_id = $2', [to.room, keyId]))) return { error: 'unknown_key' };
    return null;
  }
  const exists = lock
    ? (await liveAccounts(q, [from, to.dm])).has(to.dm)
    : (await q.one('SELECT 1 FROM accounts WHERE nick = $1 AND deleted_at IS NULL', [to.dm])) !== undefined;
  if (!exists) return { error: 'unknown_user' };
  if (to.dm === from) return { error: 'self' };
  return null;
}

/** The answer to an id already used: a retry by its sender, a conflict for anyone else. */
async function priorSend(q: Sql, m: SendInput): Promise<SendResult | null> {
  const prior = await q.one<{ sender: string; ts: number }>('SELECT sender, ts FROM envelopes WHERE id = $1', [m.id]);
  if (!prior) return null;
  return prior.sender === m.from ? { status: 'retry', id: m.id, ts: prior.ts } : { error: 'id_conflict' };
}

/** Queues the envelope for those devices that still exist; returns them. */
async function enqueue(q: Sql, deviceIds: string[], envelopeId: string, ts: number): Promise<Set<string>> {
  if (deviceIds.length === 0) return new Set();
  const rows = await q.all<{ id: string; queue_len: number }>('SELECT id, queue_len FROM devices WHERE id = ANY($1) ORDER BY id FOR UPDATE', [deviceIds]);
  for (const r of rows) {
    if (r.queue_len < LIMITS.queuePerDevice) continue;
    // The cap drops the oldest entries: the queue is a mailbox, not an archive.
    const drop = r.queue_len - LIMITS.queuePerDevice + 1;
    const n = await q.run('DELETE FROM queue WHERE seq IN (SELECT seq FROM queue WHERE device_id = $1 ORDER BY seq LIMIT $2)', [r.id, drop]);
    await q.run('UPDATE devices SET queue_len = queue_len - $2 WHERE id = $1', [r.id, n]);
  }
  const ids = rows.map((r) => r.id);
  if (ids.length > 0) {
    await q.run('INSERT INTO queue (device_id, envelope_id, ts) SELECT d, $2, $3 FROM unnest($1::text[]) AS t(d)', [ids, envelopeId, ts]);
    await q.run('UPDATE devices SET queue_len = queue_len + 1 WHERE id = ANY($1)', [ids]);
  }
  return new Set(ids);
}

export async function sendMessage(q: Sql, m: SendInput): Promise<SendResult> {
  const prior = await priorSend(q, m);
  if (prior) return prior;
  // Rights are checked again inside the transaction: membership may have changed since step 5.
  const refused = await checkSend(q, m.from, m.to, m.keyId, true);
  if (refused) return refused;

  const envelope: Envelope = { id: m.id, to: m.to, from: m.from, keyId: m.keyId, iv: m.iv, ct: m.ct, ts: m.now };
  const json = envelopeJson(envelope);
  // Two sends of one id at once: the primary key lets one in; the other waits for it to
  // commit and then answers as a retry or a conflict, having written nothing.
  const inserted = await q.run('INSERT INTO envelopes (id, sender, ts, json) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING', [
    m.id,
    m.from,
    m.now,
    json,
  ]);
  if (inserted === 0) return (await priorSend(q, m))!;

  let targets: SendTarget[];
  let roomName: string | null = null;
  if ('room' in m.to) {
    roomName = (await q.one<{ name: string }>('SELECT name FROM rooms WHERE id = $1', [m.to.room]))!.name;
    targets = await q.all<SendTarget>(
      `SELECT d.id AS "deviceId", d.nick AS nick FROM room_members rm JOIN devices d ON d.nick = rm.nick
       WHERE rm.room_id = $1 AND d.id <> $2 ORDER BY rm.seq, d.seq`,
      [m.to.room, m.senderDevice],
    );
  } else {
    targets = await q.all<SendTarget>('SELECT id AS "deviceId", nick FROM devices WHERE nick = $1 OR (nick = $2 AND id <> $3) ORDER BY seq', [
      m.to.dm,
      m.from,
      m.senderDevice,
    ]);
    const known = (await q.one<{ n: number }>('SELECT COUNT(*) AS n FROM contacts WHERE (nick = $1 AND peer = $2) OR (nick = $2 AND peer = $1)', [m.from, m.to.dm]))!.n;
    if (known < 2) {
      await lockNicks(q, LOCK.contacts, [m.from, m.to.dm]);
      await addContactIfRoom(q, m.from, m.to.dm, m.now);
      await addContactIfRoom(q, m.to.dm, m.from, m.now);
    }
  }
  const queued = await enqueue(q, targets.map((t) => t.deviceId), m.id, m.now);
  // A device deleted while this send waited for its lock is no target any more.
  targets = targets.filter((t) => queued.has(t.deviceId));
  return { status: 'queued', envelope, json, targets, roomName };
}

export async function ack(q: Sql, deviceId: string, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await q.run('SELECT 1 FROM devices WHERE id = $1 FOR UPDATE', [deviceId]);
  const n = await q.run('DELETE FROM queue WHERE device_id = $1 AND envelope_id = ANY($2)', [deviceId, ids]);
  if (n > 0) await q.run('UPDATE devices SET queue_len = queue_len - $2 WHERE id = $1', [deviceId, n]);
}

export async function readQueue(q: Sql, deviceId: string, afterSeq: number, limit: number): Promise<QueuedEntry[]> {
  return q.all<QueuedEntry>(
    `SELECT q.seq AS seq, q.envelope_id AS id, e.json AS json FROM queue q JOIN envelopes e ON e.id = q.envelope_id
     WHERE q.device_id = $1 AND q.seq > $2 ORDER BY q.seq LIMIT $3`,
    [deviceId, afterSeq, limit],
  );
}

/**
 * Drops queue entries past retention and envelopes nobody needs: not queued anywhere and too
 * old to be retried (an id whose ULID time is outside the clock window is refused anyway;
 * its ULID time is at most 5 minutes after its ts, so 10 minutes after ts is safe).
 */
export async function purgeEnvelopes(q: Sql, now: number): Promise<number> {
  const cutoff = now - LIMITS.queueRetentionMs;
  await q.run('SELECT 1 FROM devices WHERE id IN (SELECT device_id FROM queue WHERE ts < $1) ORDER BY id FOR UPDATE', [cutoff]);
  // Counting what this very DELETE removed keeps queue_len exact whatever ran before it.
  const expired = await q.all<{ device_id: string; n: number }>(
    'WITH gone AS (DELETE FROM queue WHERE ts < $1 RETURNING device_id) SELECT device_id, COUNT(*) AS n FROM gone GROUP BY device_id ORDER BY device_id',
    [cutoff],
  );
  for (const e of expired) await q.run('UPDATE devices SET queue_len = queue_len - $2 WHERE id = $1', [e.device_id, e.n]);
  return q.run('DELETE FROM envelopes WHERE ts < $1 AND NOT EXISTS (SELECT 1 FROM queue WHERE queue.envelope_id = envelopes.id)', [
    now - 2 * LIMITS.clockWindowMs,
  ]);
}
