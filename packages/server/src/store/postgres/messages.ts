/**
 * Message operations of the PostgreSQL store: the send fan-out, acks, replay and retention.
 *
 * Every change to a device's queue (enqueue, cap drop, ack, purge, device deletion) holds that
 * device's row lock, taken in id order. So queue_len stays exact, and a device's entries commit
 * in the order of their seq: a replay that pages by seq never skips an entry committed later.
 */
import { LIMITS, envelopeJson, type Envelope, type EnvelopeJson } from '@svc/protocol';
import type { QueuedEntry, SendInput, SendResult, SendTarget } from '../types.js';
import type { Sql } from './db.js';
import { LOCK } from './locks.js';

interface SendRow {
  outcome: 'queued' | 'retry' | 'id_conflict' | 'not_member' | 'unknown_key' | 'unknown_user' | 'self';
  prior_ts: number | null;
  room_name: string | null;
  target_devices: string[] | null;
  target_nicks: string[] | null;
  target_pushable: boolean[] | null;
}

/** The limits and lock namespace `send_envelope` takes as parameters, so the numbers stay in LIMITS. */
const SEND_CONSTANTS = [LOCK.contacts, LIMITS.contactsPerAccount, LIMITS.queuePerDevice];

function envelopeOf(m: SendInput): Envelope {
  return { id: m.id, to: m.to, from: m.from, keyId: m.keyId, iv: m.iv, ct: m.ct, ts: m.now };
}

function resultOf(m: SendInput, envelope: Envelope, json: EnvelopeJson, r: SendRow): SendResult {
  if (r.outcome === 'retry') return { status: 'retry', id: m.id, ts: r.prior_ts! };
  if (r.outcome !== 'queued') return { error: r.outcome };
  const nicks = r.target_nicks ?? [];
  const pushable = r.target_pushable ?? [];
  const targets: SendTarget[] = (r.target_devices ?? []).map((deviceId, i) => ({ deviceId, nick: nicks[i]!, pushable: pushable[i] === true }));
  return { status: 'queued', envelope, json, targets, roomName: r.room_name };
}

/**
 * The send transaction (message steps 5 and 7) in one statement: the function `send_envelope` of
 * migration 2 re-checks the rights under the room or account share-locks, answers a used id as a
 * retry or a conflict, stores the envelope, adds the contacts of a first DM, locks the target
 * devices in id order and queues the envelope for them under the cap. See migrations.ts for
 * each step's reasons. Run it in autocommit (one statement is one transaction, one round trip).
 */
export async function sendMessage(q: Sql, m: SendInput): Promise<SendResult> {
  const envelope = envelopeOf(m);
  const json = envelopeJson(envelope);
  const r = (await q.one<SendRow>('SELECT * FROM send_envelope($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)', [
    m.id,
    m.from,
    'dm' in m.to ? m.to.dm : null,
    'room' in m.to ? m.to.room : null,
    m.keyId,
    m.senderDevice,
    m.now,
    json,
    ...SEND_CONSTANTS,
  ]))!;
  return resultOf(m, envelope, json, r);
}

/**
 * Several sends in one statement, hence one transaction (send-batch.ts): `send_envelope` runs
 * once per send, in the order of the input arrays, and each call sees what the earlier ones
 * wrote. The sends go in room order, then recipient order (a stable sort: two sends to one chat
 * keep their order), so that two batches with the same rooms or recipients take those locks in
 * the same order and do not deadlock on them.
 */
export async function sendMessages(q: Sql, ms: SendInput[]): Promise<SendResult[]> {
  const key = (m: SendInput): string => ('room' in m.to ? `r${m.to.room}` : `u${m.to.dm}`);
  const order = ms
    .map((_, i) => i)
    .sort((a, b) => {
      const ka = key(ms[a]!);
      const kb = key(ms[b]!);
      return ka < kb ? -1 : ka > kb ? 1 : a - b;
    });
  const sorted = order.map((i) => ms[i]!);
  const envelopes = sorted.map(envelopeOf);
  const jsons = envelopes.map(envelopeJson);
  const rows = await q.all<SendRow>(
    `SELECT s.* FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[])
                     WITH ORDINALITY AS a(id, sender, dm, room, key_id, device, ts, json, i)
       CROSS JOIN LATERAL send_envelope(a.id, a.sender, a.dm, a.room, a.key_id, a.device, a.ts, a.json, $9, $10, $11) s
      ORDER BY a.i`,
    [
      sorted.map((m) => m.id),
      sorted.map((m) => m.from),
      sorted.map((m) => ('dm' in m.to ? m.to.dm : null)),
      sorted.map((m) => ('room' in m.to ? m.to.room : null)),
      sorted.map((m) => m.keyId),
      sorted.map((m) => m.senderDevice),
      sorted.map((m) => m.now),
      jsons,
      ...SEND_CONSTANTS,
    ],
  );
  if (rows.length !== ms.length) throw new Error(`send_envelope answered ${rows.length} rows for ${ms.length} sends`);
  const results = new Array<SendResult>(ms.length);
  order.forEach((orig, k) => {
    results[orig] = resultOf(sorted[k]!, envelopes[k]!, jsons[k]!, rows[k]!);
  });
  return results;
}

/** Drops acknowledged entries from a device queue in one statement (`ack_envelopes`, migration 2); run it in autocommit. */
export async function ack(q: Sql, deviceId: string, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await q.run('SELECT ack_envelopes($1, $2)', [deviceId, ids]);
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
  // A queue entry's ts is its envelope's: old entries are found through envelopes_ts (migration 3).
  const old = 'SELECT id FROM envelopes WHERE ts < $1';
  await q.run(`SELECT 1 FROM devices WHERE id IN (SELECT device_id FROM queue WHERE envelope_id IN (${old})) ORDER BY id FOR UPDATE`, [cutoff]);
  // Counting what this very DELETE removed keeps queue_len exact whatever ran before it.
  const expired = await q.all<{ device_id: string; n: number }>(
    `WITH gone AS (DELETE FROM queue WHERE envelope_id IN (${old}) RETURNING device_id)
     SELECT device_id, COUNT(*) AS n FROM gone GROUP BY device_id ORDER BY device_id`,
    [cutoff],
  );
  for (const e of expired) await q.run('UPDATE devices SET queue_len = queue_len - $2 WHERE id = $1', [e.device_id, e.n]);
  return q.run('DELETE FROM envelopes WHERE ts < $1 AND NOT EXISTS (SELECT 1 FROM queue WHERE queue.envelope_id = envelopes.id)', [
    now - 2 * LIMITS.clockWindowMs,
  ]);
}
