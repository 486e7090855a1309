/** Message operations of the SQLite store: the send fan-out, acks, replay and retention. */
import { LIMITS, type Envelope, type Target } from '@svc/protocol';
import type { QueuedEntry, Refusal, SendInput, SendResult, SendTarget } from '../types.js';
import { isMember } from './rooms.js';
import { placeholders, type Statements } from './statements.js';
import type { QueueCounts } from './queue-counts.js';

/** Envelope JSON in the field order of interface.md: id, to, from, keyId, iv, ct, ts. */
export function envelopeJson(e: Envelope): string {
  return JSON.stringify({ id: e.id, to: e.to, from: e.from, keyId: e.keyId, iv: e.iv, ct: e.ct, ts: e.ts });
}

/** Facts the send path asks about on every DM, answered from memory when known (read-cache.ts). */
export interface Known {
  liveAccount(nick: string): boolean;
  contact(nick: string, peer: string): boolean;
}

export function checkSend(q: Statements, known: Known, from: string, to: Target, keyId: string): Refusal<'not_member' | 'unknown_key' | 'unknown_user' | 'self'> | null {
  if ('room' in to) {
    if (!isMember(q, to.room, from)) return { error: 'not_member' };
    if (!q.one('SELECT 1 FROM room_key_ids WHERE room_id = ? AND key_id = ?', to.room, keyId)) return { error: 'unknown_key' };
    return null;
  }
  if (!known.liveAccount(to.dm)) return { error: 'unknown_user' };
  if (to.dm === from) return { error: 'self' };
  return null;
}

/** Adds the two contact rows of a DM where missing, each within its owner's contact limit. */
function addContacts(q: Statements, known: Known, from: string, to: string, now: number): void {
  // Nearly every DM is between existing contacts, and that is usually known without a query.
  if (!known.contact(from, to)) addContactIfRoom(q, from, to, now);
  if (!known.contact(to, from)) addContactIfRoom(q, to, from, now);
}

function addContactIfRoom(q: Statements, nick: string, peer: string, now: number): void {
  const n = q.one<{ n: number }>('SELECT COUNT(*) AS n FROM contacts WHERE nick = ?', nick)!.n;
  if (n < LIMITS.contactsPerAccount) q.run('INSERT INTO contacts (nick, peer, created_at) VALUES (?, ?, ?)', nick, peer, now);
}

interface TargetRow {
  deviceId: string;
  nick: string;
  pushable: 0 | 1;
}

const PUSHABLE = '(d.push_endpoint IS NOT NULL AND d.push_pending = 0) AS pushable';
// Built once: a statement's SQL text is its cache key, and a text built per send is hashed anew each time.
const ROOM_TARGETS = `SELECT d.id AS deviceId, d.nick AS nick, ${PUSHABLE} FROM room_members rm JOIN devices d ON d.nick = rm.nick
  WHERE rm.room_id = ? AND d.id <> ? ORDER BY rm.seq, d.seq`;
const DM_TARGETS = `SELECT d.id AS deviceId, d.nick AS nick, ${PUSHABLE} FROM devices d WHERE d.nick = ? OR (d.nick = ? AND d.id <> ?) ORDER BY d.seq`;

/**
 * Queues the envelope for every target with one statement (up to 200 targets), after making
 * room in the few queues that are full (queue lengths are kept in memory: queue-counts.ts).
 */
function enqueue(q: Statements, counts: QueueCounts, targets: TargetRow[], envelopeId: string, ts: number): void {
  if (targets.length === 0) return;
  for (const t of targets) {
    // The kept count is exact: this process is the queue's writer, and the store forgets the
    // counts after a rollback or another process's commit. Counting the rows here instead would
    // cost a scan of 10,000 entries on every send to a device whose queue stays full.
    const len = counts.of(t.deviceId);
    if (len < LIMITS.queuePerDevice) continue;
    // The cap drops the oldest entries: the queue is a mailbox, not an archive.
    const drop = len - LIMITS.queuePerDevice + 1;
    const r = q.run('DELETE FROM queue WHERE seq IN (SELECT seq FROM queue WHERE device_id = ? ORDER BY seq LIMIT ?)', t.deviceId, drop);
    counts.changed(t.deviceId, -r.changes);
  }
  // Rows in fan-out order, so a device's entries get their seq in that order. A VALUES list per
  // size is a prepared statement of its own (cached); it costs half of what json_each did.
  for (let i = 0; i < targets.length; i += ENQUEUE_CHUNK) {
    const chunk = targets.slice(i, i + ENQUEUE_CHUNK);
    const rows: unknown[] = [];
    for (const t of chunk) rows.push(t.deviceId, envelopeId, ts);
    q.run(ENQUEUE_SQL[chunk.length]!, ...rows);
  }
  for (const t of targets) counts.changed(t.deviceId, 1);
}

/** At most this many rows per statement (3 variables each, well under SQLite's variable limit). */
const ENQUEUE_CHUNK = 200;
const ENQUEUE_SQL = Array.from({ length: ENQUEUE_CHUNK + 1 }, (_, n) => `INSERT INTO queue (device_id, envelope_id, ts) VALUES ${new Array(n).fill('(?, ?, ?)').join(', ')}`);

export function sendMessage(q: Statements, known: Known, counts: QueueCounts, m: SendInput): SendResult {
  // Rights are checked again inside the transaction: membership may have changed since step 5.
  // A used id is answered before any refusal (a retry stays a retry after its sender left).
  const refused = checkSend(q, known, m.from, m.to, m.keyId);
  if (refused) return priorSend(q, m) ?? refused;

  const envelope: Envelope = { id: m.id, to: m.to, from: m.from, keyId: m.keyId, iv: m.iv, ct: m.ct, ts: m.now };
  const json = envelopeJson(envelope);
  // The primary key finds a used id: nothing is inserted, and the sender's retry is answered.
  const inserted = q.run('INSERT INTO envelopes (id, sender, ts, json) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING', m.id, m.from, m.now, json);
  if (inserted.changes === 0) return priorSend(q, m)!;

  let targets: TargetRow[];
  let roomName: string | null = null;
  if ('room' in m.to) {
    roomName = q.one<{ name: string }>('SELECT name FROM rooms WHERE id = ?', m.to.room)!.name;
    targets = q.all<TargetRow>(ROOM_TARGETS, m.to.room, m.senderDevice);
  } else {
    targets = q.all<TargetRow>(DM_TARGETS, m.to.dm, m.from, m.senderDevice);
    addContacts(q, known, m.from, m.to.dm, m.now);
  }
  enqueue(q, counts, targets, m.id, m.now);
  return { status: 'queued', envelope, json, targets: targets.map((t) => ({ deviceId: t.deviceId, nick: t.nick, pushable: t.pushable === 1 })), roomName };
}

/** The answer to an id already used: a retry by its sender, a conflict for anyone else. */
function priorSend(q: Statements, m: SendInput): SendResult | null {
  const prior = q.one<{ sender: string; ts: number }>('SELECT sender, ts FROM envelopes WHERE id = ?', m.id);
  if (!prior) return null;
  return prior.sender === m.from ? { status: 'retry', id: m.id, ts: prior.ts } : { error: 'id_conflict' };
}

export function ack(q: Statements, counts: QueueCounts, deviceId: string, ids: string[]): void {
  if (ids.length === 0) return;
  const r = q.run(`DELETE FROM queue WHERE device_id = ? AND envelope_id IN (${placeholders(ids.length)})`, deviceId, ...ids);
  counts.changed(deviceId, -r.changes);
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
export function purgeEnvelopes(q: Statements, counts: QueueCounts, now: number): number {
  // A queue entry's ts is its envelope's: old entries are found through envelopes_ts.
  const old = 'SELECT id FROM envelopes WHERE ts < ?';
  const cutoff = now - LIMITS.queueRetentionMs;
  const expired = q.all<{ device_id: string; n: number }>(`SELECT device_id, COUNT(*) AS n FROM queue WHERE envelope_id IN (${old}) GROUP BY device_id`, cutoff);
  q.run(`DELETE FROM queue WHERE envelope_id IN (${old})`, cutoff);
  for (const e of expired) counts.changed(e.device_id, -e.n);
  const r = q.run(
    'DELETE FROM envelopes WHERE ts < ? AND NOT EXISTS (SELECT 1 FROM queue WHERE queue.envelope_id = envelopes.id)',
    now - 2 * LIMITS.clockWindowMs,
  );
  return r.changes;
}
