/** Message operations of the SQLite store: the send fan-out, acks, replay and retention. */
import { LIMITS, envelopeJson, type Envelope, type Target } from '@svc/protocol';
import type { QueuedEntry, SendInput, SendResult, SendTarget, TargetFacts } from '../types.js';
import {
  decideSend,
  dmTargets,
  firstDmContacts,
  queueOverflow,
  roomTargets,
  sendRefusal,
  type CandidateDevice,
  type ContactFacts,
  type PriorSend,
} from '../../rules/send.js';
import { isMember } from './rooms.js';
import { placeholders, type Statements } from './statements.js';
import type { QueueIndex } from './queue-index.js';
import { keysBefore, type TimeKeys } from './time-keys.js';

/** Facts the send path asks about on every DM, answered from memory when known (read-cache.ts). */
export interface Known {
  liveAccount(nick: string): boolean;
  contact(nick: string, peer: string): boolean;
  /** The account's devices, in seq order, with whether each could be pushed. */
  devicesOf(nick: string): readonly DeviceTarget[];
}

/** A device as a send target: the rules' candidate. */
export type DeviceTarget = CandidateDevice;

/** SQLite has no booleans: a row's `pushable` is 0 or 1. */
interface DeviceTargetRow extends Omit<DeviceTarget, 'pushable'> {
  pushable: 0 | 1;
}

const PUSHABLE = '(d.push_endpoint IS NOT NULL AND d.push_pending = 0) AS pushable';
// Built once: a statement's SQL text is its cache key, and a text built per send is hashed anew each time.
/** The SQL behind `Known.devicesOf`. */
const DEVICE_TARGETS = `SELECT d.id AS deviceId, d.nick AS nick, d.seq AS seq, ${PUSHABLE} FROM devices d WHERE d.nick = ? ORDER BY d.seq`;

export function devicesOf(q: Statements, nick: string): DeviceTarget[] {
  return q.all<DeviceTargetRow>(DEVICE_TARGETS, nick).map((r) => ({ ...r, pushable: r.pushable === 1 }));
}

/** The facts the send rules (rules/send.ts) check a target against. */
export function targetFacts(q: Statements, known: Known, from: string, to: Target, keyId: string): TargetFacts {
  if ('room' in to) {
    const keyIsKnown = q.one('SELECT 1 FROM room_key_ids WHERE room_id = ? AND key_id = ?', to.room, keyId) !== undefined;
    return { room: true, senderIsMember: isMember(q, to.room, from), keyIsKnown };
  }
  return { room: false, recipientIsLive: known.liveAccount(to.dm) };
}

/** Adds the contact rows of a first DM that the rules ask for. */
function addContacts(q: Statements, known: Known, from: string, to: string, now: number): void {
  // Nearly every DM is between existing contacts, and that is usually known without a query.
  const facts: ContactFacts = {
    has: (nick, peer) => known.contact(nick, peer),
    count: (nick) => q.one<{ n: number }>('SELECT COUNT(*) AS n FROM contacts WHERE nick = ?', nick)!.n,
  };
  for (const [nick, peer] of firstDmContacts(from, to, facts))
    q.run('INSERT INTO contacts (nick, peer, created_at) VALUES (?, ?, ?)', nick, peer, now);
}

interface RoomDeviceRow extends DeviceTargetRow {
  memberSeq: number;
}

const ROOM_DEVICES = `SELECT d.id AS deviceId, d.nick AS nick, d.seq AS seq, rm.seq AS memberSeq, ${PUSHABLE}
  FROM room_members rm JOIN devices d ON d.nick = rm.nick WHERE rm.room_id = ? ORDER BY rm.seq, d.seq`;

/**
 * Queues the envelope for every target with one statement (up to 200 targets), after making
 * room in the few queues that are full (each device's entries are known in memory: queue-index.ts).
 * `key` is the envelope's own (its rowid): the entries of one envelope share it.
 */
function enqueue(q: Statements, index: QueueIndex, targets: readonly SendTarget[], key: number): void {
  if (targets.length === 0) return;
  for (const t of targets) {
    // The kept index is exact: this process is the queue's writer, and the store forgets it
    // after a rollback or another process's commit.
    const over = queueOverflow(index.of(t.deviceId), 1);
    if (over === 0) continue;
    const drop = index.oldest(t.deviceId, over);
    deleteEntries(q, t.deviceId, drop);
    index.removed(t.deviceId, drop);
  }
  // A VALUES list per size is a prepared statement of its own (cached); it costs half of what
  // json_each did.
  for (let i = 0; i < targets.length; i += ENQUEUE_CHUNK) {
    const chunk = targets.slice(i, i + ENQUEUE_CHUNK);
    const rows: unknown[] = [];
    for (const t of chunk) rows.push(key, t.deviceId);
    q.run(ENQUEUE_SQL[chunk.length]!, ...rows);
    for (const t of chunk) index.added(t.deviceId, key);
  }
}

/** At most this many rows per statement (2 variables each, well under SQLite's variable limit). */
const ENQUEUE_CHUNK = 200;
const ENQUEUE_SQL = Array.from(
  { length: ENQUEUE_CHUNK + 1 },
  (_, n) => `INSERT INTO queue (envelope_key, device_id) VALUES ${new Array(n).fill('(?, ?)').join(', ')}`,
);

/**
 * Deletes a device's queue entries by their envelopes' keys, in statements of at most 500. The
 * device is named with them: an envelope's entries for its other targets share the key.
 */
export function deleteEntries(q: Statements, deviceId: string, keys: readonly number[]): void {
  for (let i = 0; i < keys.length; i += 500) {
    const part = keys.slice(i, i + 500);
    q.run(`DELETE FROM queue WHERE device_id = ? AND envelope_key IN (${placeholders(part.length)})`, deviceId, ...part);
  }
}

/** The rowid is the envelope's time key (time-keys.ts); a taken id or a taken key inserts nothing. */
const INSERT_ENVELOPE = 'INSERT INTO envelopes (rowid, id, sender, ts, json) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING';

export function sendMessage(q: Statements, known: Known, index: QueueIndex, keys: TimeKeys, m: SendInput): SendResult {
  // The rules are applied again inside the transaction: rights may have changed since step 5.
  const facts = targetFacts(q, known, m.from, m.to, m.keyId);
  // A used id is looked up only when the answer depends on it: after a refusal (the rules answer
  // a used id first), and when the insert below finds the id taken.
  if (sendRefusal(m.from, m.to, facts)) return decideSend(m, priorSend(q, m.id), facts)!;

  const envelope: Envelope = { id: m.id, to: m.to, from: m.from, keyId: m.keyId, iv: m.iv, ct: m.ct, ts: m.now };
  const json = envelopeJson(envelope);
  // The primary key finds a used id: nothing is inserted, and the rules answer it. Nothing is
  // inserted either when the time key is taken, which only the next key mends.
  let key = keys.first(m.now);
  let stored = q.run(INSERT_ENVELOPE, key, m.id, m.from, m.now, json);
  while (stored.changes === 0) {
    const prior = priorSend(q, m.id);
    if (prior !== null) return decideSend(m, prior, facts)!;
    if (key === null) throw new Error('the envelope could not be stored');
    key = keys.after(key);
    stored = q.run(INSERT_ENVELOPE, key, m.id, m.from, m.now, json);
  }

  let targets: DeviceTarget[];
  let roomName: string | null = null;
  if ('room' in m.to) {
    roomName = q.one<{ name: string }>('SELECT name FROM rooms WHERE id = ?', m.to.room)!.name;
    const rows = q.all<RoomDeviceRow>(ROOM_DEVICES, m.to.room);
    targets = roomTargets(
      rows.map((r) => ({ ...r, pushable: r.pushable === 1 })),
      m.senderDevice,
    );
  } else {
    targets = dmTargets(known.devicesOf(m.to.dm), known.devicesOf(m.from), m.senderDevice);
    addContacts(q, known, m.from, m.to.dm, m.now);
  }
  // SQLite's own choice of key when `key` is null (time-keys.ts).
  enqueue(q, index, targets, Number(stored.lastInsertRowid));
  return {
    status: 'queued',
    envelope,
    json,
    targets: targets.map((t) => ({ deviceId: t.deviceId, nick: t.nick, pushable: t.pushable })),
    roomName,
  };
}

function priorSend(q: Statements, id: string): PriorSend | null {
  return q.one<PriorSend>('SELECT sender, ts FROM envelopes WHERE id = ?', id) ?? null;
}

export function ack(q: Statements, index: QueueIndex, deviceId: string, ids: string[]): void {
  if (ids.length === 0) return;
  // Each id's key from the envelopes' id key, then the entry by its own key.
  const gone = q.all<{ k: number }>(
    `DELETE FROM queue WHERE device_id = ? AND envelope_key IN (SELECT rowid FROM envelopes WHERE id IN (${placeholders(ids.length)}))
     RETURNING envelope_key AS k`,
    deviceId,
    ...ids,
  );
  index.removed(
    deviceId,
    gone.map((r) => r.k),
  );
}

export function readQueue(q: Statements, index: QueueIndex, deviceId: string, afterKey: number, limit: number): QueuedEntry[] {
  const out: QueuedEntry[] = [];
  // Entries another process deleted (the admin command) stay in the index until this process's
  // next write notices; the page is filled past them, since a short page means the end.
  for (let after = afterKey; out.length < limit;) {
    const keys = index.after(deviceId, after, limit - out.length);
    if (keys.length === 0) break;
    out.push(
      ...q.all<QueuedEntry>(
        `SELECT q.envelope_key AS seq, e.id AS id, e.json AS json FROM queue q JOIN envelopes e ON e.rowid = q.envelope_key
         WHERE q.device_id = ? AND q.envelope_key IN (${placeholders(keys.length)}) ORDER BY q.envelope_key`,
        deviceId,
        ...keys,
      ),
    );
    after = keys[keys.length - 1]!;
  }
  return out;
}

/**
 * Drops queue entries past retention and envelopes nobody needs: not queued anywhere and too
 * old to be retried (an id whose ULID time is outside the clock window is refused anyway;
 * its ULID time is at most 5 minutes after its ts, so 10 minutes after ts is safe).
 */
export function purgeEnvelopes(q: Statements, index: QueueIndex, now: number): number {
  // A queue entry's key is its envelope's, and old envelopes are a range of keys (time-keys.ts).
  const cutoff = now - LIMITS.queueRetentionMs;
  const expired = q.all<{ d: string; k: number }>(
    'DELETE FROM queue WHERE envelope_key IN (SELECT rowid FROM envelopes WHERE rowid < ? AND ts < ?) RETURNING device_id AS d, envelope_key AS k',
    keysBefore(cutoff),
    cutoff,
  );
  const byDevice = new Map<string, number[]>();
  for (const e of expired) {
    const list = byDevice.get(e.d);
    if (list) list.push(e.k);
    else byDevice.set(e.d, [e.k]);
  }
  for (const [deviceId, keys] of byDevice) index.removed(deviceId, keys);
  const unused = now - 2 * LIMITS.clockWindowMs;
  const r = q.run(
    'DELETE FROM envelopes WHERE rowid < ? AND ts < ? AND NOT EXISTS (SELECT 1 FROM queue WHERE queue.envelope_key = envelopes.rowid)',
    keysBefore(unused),
    unused,
  );
  return r.changes;
}
