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

interface TargetRow {
  deviceId: string;
  nick: string;
  queue_len: number;
  member_seq: number;
  device_seq: number;
}

/**
 * The target devices (message step 7), locked in id order, the order every writer of queues
 * locks them in, then sorted into fan-out order: members by join order, devices oldest first.
 * A device deleted while this waited for its lock is no longer returned.
 */
async function lockTargets(q: Sql, m: SendInput): Promise<TargetRow[]> {
  const rows =
    'room' in m.to
      ? await q.all<TargetRow>(
          `SELECT d.id AS "deviceId", d.nick, d.queue_len, rm.seq AS member_seq, d.seq AS device_seq
           FROM room_members rm JOIN devices d ON d.nick = rm.nick
           WHERE rm.room_id = $1 AND d.id <> $2 ORDER BY d.id FOR UPDATE OF d`,
          [m.to.room, m.senderDevice],
        )
      : await q.all<TargetRow>(
          `SELECT id AS "deviceId", nick, queue_len, 0 AS member_seq, seq AS device_seq
           FROM devices WHERE nick = $1 OR (nick = $2 AND id <> $3) ORDER BY id FOR UPDATE`,
          [m.to.dm, m.from, m.senderDevice],
        );
  return rows.sort((a, b) => a.member_seq - b.member_seq || a.device_seq - b.device_seq);
}

/** Queues the envelope for the locked target devices, dropping the oldest entries of full queues. */
async function enqueue(q: Sql, targets: TargetRow[], envelopeId: string, ts: number): Promise<void> {
  if (targets.length === 0) return;
  for (const t of targets) {
    if (t.queue_len < LIMITS.queuePerDevice) continue;
    // The cap drops the oldest entries: the queue is a mailbox, not an archive.
    const drop = t.queue_len - LIMITS.queuePerDevice + 1;
    const n = await q.run('DELETE FROM queue WHERE seq IN (SELECT seq FROM queue WHERE device_id = $1 ORDER BY seq LIMIT $2)', [t.deviceId, drop]);
    await q.run('UPDATE devices SET queue_len = queue_len - $2 WHERE id = $1', [t.deviceId, n]);
  }
  await q.run(
    `WITH added AS (INSERT INTO queue (device_id, envelope_id, ts) SELECT d, $2, $3 FROM unnest($1::text[]) AS t(d) RETURNING device_id)
     UPDATE devices SET queue_len = queue_len + 1 WHERE id IN (SELECT device_id FROM added)`,
    [targets.map((t) => t.deviceId), envelopeId, ts],
  );
}

export async function sendMessage(q: Sql, m: SendInput): Promise<SendResult> {
  // Rights are checked again inside the transaction: membership may have changed since step 5.
  // A used id is answered before any refusal (a retry stays a retry after its sender left the
  // room); looking for it only when needed saves a round trip on every new envelope.
  const refused = await checkSend(q, m.from, m.to, m.keyId, true);
  if (refused) return (await priorSend(q, m)) ?? refused;

  const envelope: Envelope = { id: m.id, to: m.to, from: m.from, keyId: m.keyId, iv: m.iv, ct: m.ct, ts: m.now };
  const json = envelopeJson(envelope);
  // An id already used, or two sends of one id at once: the primary key lets one in; the other
  // (after waiting for it to commit) answers as a retry or a conflict, having written nothing.
  const inserted = await q.run('INSERT INTO envelopes (id, sender, ts, json) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING', [
    m.id,
    m.from,
    m.now,
    json,
  ]);
  if (inserted === 0) return (await priorSend(q, m))!;

  let roomName: string | null = null;
  if ('room' in m.to) {
    roomName = (await q.one<{ name: string }>('SELECT name FROM rooms WHERE id = $1', [m.to.room]))!.name;
  } else {
    const known = (await q.one<{ n: number }>('SELECT COUNT(*) AS n FROM contacts WHERE (nick = $1 AND peer = $2) OR (nick = $2 AND peer = $1)', [m.from, m.to.dm]))!.n;
    if (known < 2) {
      await lockNicks(q, LOCK.contacts, [m.from, m.to.dm]);
      await addContactIfRoom(q, m.from, m.to.dm, m.now);
      await addContactIfRoom(q, m.to.dm, m.from, m.now);
    }
  }
  const locked = await lockTargets(q, m);
  await enqueue(q, locked, m.id, m.now);
  const targets: SendTarget[] = locked.map((t) => ({ deviceId: t.deviceId, nick: t.nick }));
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
