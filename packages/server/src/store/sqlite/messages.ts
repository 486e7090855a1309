/** Message operations of the SQLite store: the send fan-out, acks, replay and retention. */
import { LIMITS, type Envelope, type Target } from '@svc/protocol';
import type { QueuedEntry, Refusal, SendInput, SendResult, SendTarget } from '../types.js';
import { isMember } from './rooms.js';
import { placeholders, type Statements } from './statements.js';

/** Envelope JSON in the field order of interface.md: id, to, from, keyId, iv, ct, ts. */
export function envelopeJson(e: Envelope): string {
  return JSON.stringify({ id: e.id, to: e.to, from: e.from, keyId: e.keyId, iv: e.iv, ct: e.ct, ts: e.ts });
}

function accountExists(q: Statements, nick: string): boolean {
  return q.one('SELECT 1 FROM accounts WHERE nick = ? AND deleted_at IS NULL', nick) !== undefined;
}

export function checkSend(q: Statements, from: string, to: Target, keyId: string): Refusal<'not_member' | 'unknown_key' | 'unknown_user' | 'self'> | null {
  if ('room' in to) {
    if (!isMember(q, to.room, from)) return { error: 'not_member' };
    if (!q.one('SELECT 1 FROM room_key_ids WHERE room_id = ? AND key_id = ?', to.room, keyId)) return { error: 'unknown_key' };
    return null;
  }
  if (!accountExists(q, to.dm)) return { error: 'unknown_user' };
  if (to.dm === from) return { error: 'self' };
  return null;
}

function addContactIfRoom(q: Statements, nick: string, peer: string, now: number): void {
  if (q.one('SELECT 1 FROM contacts WHERE nick = ? AND peer = ?', nick, peer)) return;
  const n = q.one<{ n: number }>('SELECT COUNT(*) AS n FROM contacts WHERE nick = ?', nick)!.n;
  if (n < LIMITS.contactsPerAccount) q.run('INSERT INTO contacts (nick, peer, created_at) VALUES (?, ?, ?)', nick, peer, now);
}

function enqueue(q: Statements, deviceId: string, envelopeId: string, ts: number): void {
  const dev = q.one<{ queue_len: number }>('SELECT queue_len FROM devices WHERE id = ?', deviceId);
  if (!dev) return;
  if (dev.queue_len >= LIMITS.queuePerDevice) {
    // The cap drops the oldest entries: the queue is a mailbox, not an archive.
    const drop = dev.queue_len - LIMITS.queuePerDevice + 1;
    const r = q.run('DELETE FROM queue WHERE seq IN (SELECT seq FROM queue WHERE device_id = ? ORDER BY seq LIMIT ?)', deviceId, drop);
    q.run('UPDATE devices SET queue_len = queue_len - ? WHERE id = ?', r.changes, deviceId);
  }
  q.run('INSERT INTO queue (device_id, envelope_id, ts) VALUES (?, ?, ?)', deviceId, envelopeId, ts);
  q.run('UPDATE devices SET queue_len = queue_len + 1 WHERE id = ?', deviceId);
}

export function sendMessage(q: Statements, m: SendInput): SendResult {
  const prior = q.one<{ sender: string; ts: number }>('SELECT sender, ts FROM envelopes WHERE id = ?', m.id);
  if (prior) return prior.sender === m.from ? { status: 'retry', id: m.id, ts: prior.ts } : { error: 'id_conflict' };
  // Rights are checked again inside the transaction: membership may have changed since step 5.
  const refused = checkSend(q, m.from, m.to, m.keyId);
  if (refused) return refused;

  const envelope: Envelope = { id: m.id, to: m.to, from: m.from, keyId: m.keyId, iv: m.iv, ct: m.ct, ts: m.now };
  const json = envelopeJson(envelope);
  q.run('INSERT INTO envelopes (id, sender, ts, json) VALUES (?, ?, ?, ?)', m.id, m.from, m.now, json);

  let targets: SendTarget[];
  let roomName: string | null = null;
  if ('room' in m.to) {
    roomName = q.one<{ name: string }>('SELECT name FROM rooms WHERE id = ?', m.to.room)!.name;
    targets = q.all<SendTarget>(
      `SELECT d.id AS deviceId, d.nick AS nick FROM room_members rm JOIN devices d ON d.nick = rm.nick
       WHERE rm.room_id = ? AND d.id <> ? ORDER BY rm.seq, d.seq`,
      m.to.room,
      m.senderDevice,
    );
  } else {
    targets = q.all<SendTarget>(
      `SELECT id AS deviceId, nick FROM devices WHERE nick = ? OR (nick = ? AND id <> ?) ORDER BY seq`,
      m.to.dm,
      m.from,
      m.senderDevice,
    );
    addContactIfRoom(q, m.from, m.to.dm, m.now);
    addContactIfRoom(q, m.to.dm, m.from, m.now);
  }
  for (const t of targets) enqueue(q, t.deviceId, m.id, m.now);
  return { status: 'queued', envelope, json, targets, roomName };
}

export function ack(q: Statements, deviceId: string, ids: string[]): void {
  if (ids.length === 0) return;
  const r = q.run(`DELETE FROM queue WHERE device_id = ? AND envelope_id IN (${placeholders(ids.length)})`, deviceId, ...ids);
  if (r.changes > 0) q.run('UPDATE devices SET queue_len = queue_len - ? WHERE id = ?', r.changes, deviceId);
}

export function readQueue(q: Statements, deviceId: string, afterSeq: number, limit: number): QueuedEntry[] {
  return q.all<QueuedEntry>(
    `SELECT q.seq AS seq, q.envelope_id AS id, e.json AS json FROM queue q JOIN envelopes e ON e.id = q.envelope_id
     WHERE q.device_id = ? AND q.seq > ? ORDER BY q.seq LIMIT ?`,
    deviceId,
    afterSeq,
    limit,
  );
}

/**
 * Drops queue entries past retention and envelopes nobody needs: not queued anywhere and too
 * old to be retried (an id whose ULID time is outside the clock window is refused anyway;
 * its ULID time is at most 5 minutes after its ts, so 10 minutes after ts is safe).
 */
export function purgeEnvelopes(q: Statements, now: number): number {
  const expired = q.all<{ device_id: string; n: number }>(
    'SELECT device_id, COUNT(*) AS n FROM queue WHERE ts < ? GROUP BY device_id',
    now - LIMITS.queueRetentionMs,
  );
  q.run('DELETE FROM queue WHERE ts < ?', now - LIMITS.queueRetentionMs);
  for (const e of expired) q.run('UPDATE devices SET queue_len = queue_len - ? WHERE id = ?', e.n, e.device_id);
  const r = q.run(
    'DELETE FROM envelopes WHERE ts < ? AND NOT EXISTS (SELECT 1 FROM queue WHERE queue.envelope_id = envelopes.id)',
    now - 2 * LIMITS.clockWindowMs,
  );
  return r.changes;
}
