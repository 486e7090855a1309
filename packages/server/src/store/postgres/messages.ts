/**
 * Message operations of the PostgreSQL store: the send fan-out, acks, replay and retention.
 *
 * A send shares its target devices (FOR KEY SHARE) with other sends, so sends to one room from
 * two instances do not wait for each other's commit; only a device's deletion waits for them.
 * queue_len is raised after the send's commit and is a count that may lag: it says when to trim,
 * and the trim counts the queue itself (migration 5 says why this never drops an entry wrongly).
 * Every other change to a queue (ack, trim, purge, device deletion) locks the device's row.
 */
import { LIMITS, envelopeJson, type Envelope } from '@svc/protocol';
import type { Admit, CallerFacts, QueuedEntry, SendInput, SendResult, TargetFacts } from '../types.js';
import {
  decideSend,
  dmTargets,
  firstDmContacts,
  roomTargets,
  type CandidateDevice,
  type ContactFacts,
  type MemberDevice,
  type PriorSend,
} from '../../rules/send.js';
import type { Sql } from './db.js';
import { LOCK } from './locks.js';
import { bigintArray, intArray, intLiteral, textArray } from './literals.js';

/** One fact of `send_facts` (migrations 4, 5, 8 and 9); its columns mean what f_kind says there. */
interface FactRow {
  f_kind: 'room' | 'live' | 'members' | 'key' | 'prior' | 'contact' | 'count' | 'devices' | 'caller';
  f_a: string;
  f_b: string | null;
  f_n: number | null;
  f_m: number | null;
  f_flag: boolean | null;
}

/** The facts of one batch, as `send_facts` read them under its locks. */
class BatchFacts {
  readonly roomNames = new Map<string, string>();
  readonly live = new Set<string>();
  /** Per room, its members and their join order. */
  readonly members = new Map<string, Map<string, number>>();
  readonly keys = new Set<string>();
  readonly prior = new Map<string, PriorSend>();
  readonly contacts = new Set<string>();
  readonly contactCounts = new Map<string, number>();
  /** Per account, its devices in creation order. */
  readonly devices = new Map<string, CandidateDevice[]>();
  /** Per 1-based position in the batch, the session and device read for a send that carries its session. */
  readonly callers = new Map<number, CallerFacts>();
  private readonly roomDevices = new Map<string, MemberDevice[]>();

  constructor(rows: FactRow[]) {
    for (const r of rows) {
      switch (r.f_kind) {
        case 'room':
          this.roomNames.set(r.f_a, r.f_b!);
          break;
        case 'live':
          this.live.add(r.f_a);
          break;
        case 'members':
          this.members.set(r.f_a, new Map(JSON.parse(r.f_b!) as [string, number][]));
          break;
        case 'key':
          this.keys.add(`${r.f_a} ${r.f_b!}`);
          break;
        case 'prior':
          this.prior.set(r.f_a, { sender: r.f_b!, ts: r.f_n! });
          break;
        case 'contact':
          this.contacts.add(`${r.f_a} ${r.f_b!}`);
          break;
        case 'count':
          this.contactCounts.set(r.f_a, r.f_n!);
          break;
        case 'devices':
          // NULL when no owner has a device.
          for (const [nick, deviceId, seq, pushable] of JSON.parse(r.f_b ?? '[]') as [string, string, number, boolean][]) {
            let list = this.devices.get(nick);
            if (!list) this.devices.set(nick, (list = []));
            list.push({ deviceId, nick, seq, pushable });
          }
          break;
        case 'caller':
          this.callers.set(r.f_n!, { sessionNick: r.f_a, deviceOwner: r.f_b });
          break;
      }
    }
    for (const list of this.devices.values()) list.sort((a, b) => a.seq - b.seq);
  }

  target(m: SendInput): TargetFacts {
    if ('room' in m.to) {
      return {
        room: true,
        senderIsMember: this.members.get(m.to.room)?.has(m.from) === true,
        keyIsKnown: this.keys.has(`${m.to.room} ${m.keyId}`),
      };
    }
    return { room: false, recipientIsLive: this.live.has(m.to.dm) };
  }

  devicesOf(nick: string): CandidateDevice[] {
    return this.devices.get(nick) ?? [];
  }

  /** Every device of every member of the room, with the member's join order. */
  devicesInRoom(roomId: string): MemberDevice[] {
    let list = this.roomDevices.get(roomId);
    if (!list) {
      list = [];
      for (const [nick, memberSeq] of this.members.get(roomId) ?? []) for (const d of this.devicesOf(nick)) list.push({ ...d, memberSeq });
      this.roomDevices.set(roomId, list);
    }
    return list;
  }
}

/** The rows a batch writes (writeSends), as parallel arrays. */
class BatchWrites {
  readonly envelopes = { id: [] as string[], sender: [] as string[], ts: [] as number[], json: [] as string[] };
  /** Each entry's device, and the 1-based position of its envelope in `envelopes`. */
  readonly queue = { device: [] as string[], envelope: [] as number[] };
  /** Entries added per device. */
  readonly added = new Map<string, number>();
  readonly contacts = { nick: [] as string[], peer: [] as string[], ts: [] as number[] };
}

/** The write and the commit, in one round trip (`send_write`, migrations 4 to 6, says what each array holds). */
function writeSends(w: BatchWrites): string {
  const args = [
    textArray(w.envelopes.id),
    textArray(w.envelopes.sender),
    bigintArray(w.envelopes.ts),
    textArray(w.envelopes.json),
    textArray(w.queue.device),
    intArray(w.queue.envelope),
    textArray(w.contacts.nick),
    textArray(w.contacts.peer),
    bigintArray(w.contacts.ts),
  ];
  return `SELECT send_write(${args.join(', ')}); COMMIT`;
}

/** What a committed send transaction added to each device queue (queue-counts.ts counts it). */
export type Added = Map<string, number>;

/** A send and the caller's checks, which throw to refuse it (Store.sendMessage's `admit`). */
export interface PendingSend {
  send: SendInput;
  admit: Admit;
}

/** What became of one send of a transaction: an answer, or what its caller's checks threw. */
export type SendOutcome = { result: SendResult } | { refused: unknown };

/**
 * The sends of one transaction (message steps 5 to 7, for one send or a batch of concurrent
 * ones). `send_facts` takes the locks and reads the facts; the callers' checks (steps 5 and 6)
 * admit or refuse each send; the send rules (rules/send.ts) decide each admitted send in arrival
 * order, each seeing what the earlier ones of the batch decided (an id an earlier send stored is
 * a used id, a contact row it added exists); one statement writes what they decided. Two round
 * trips whatever the batch's size: BEGIN with the facts, the write with COMMIT (as simple
 * queries, values as literals: literals.ts); a batch whose sends are all refused ends with a bare
 * COMMIT. Run it in `scriptedTransaction`, which rolls back whatever fails, then count what it
 * added (queue-counts.ts) once it has committed.
 */
export async function sendMessages(q: Sql, pending: PendingSend[]): Promise<{ outcomes: SendOutcome[]; added: Added }> {
  const ms = pending.map((p) => p.send);
  // Sends that carry their session (SendInput.session) have it and their device's owner read by
  // `send_facts` too (migration 9), as the per-request lookup (lookups.ts) would have read them.
  const confirming = ms.some((m) => m.session !== undefined);
  const args = [
    textArray(ms.map((m) => m.id)),
    textArray(ms.map((m) => m.from)),
    textArray(ms.map((m) => ('dm' in m.to ? m.to.dm : null))),
    textArray(ms.map((m) => ('room' in m.to ? m.to.room : null))),
    textArray(ms.map((m) => m.keyId)),
    intLiteral(LOCK.contacts),
  ];
  if (confirming) args.push(textArray(ms.map((m) => m.session ?? null)), textArray(ms.map((m) => m.senderDevice)));
  const [, rows] = await q.script(`BEGIN; SELECT * FROM send_facts(${args.join(', ')})`);
  const facts = new BatchFacts(rows as FactRow[]);
  const callers = new Map<SendInput, CallerFacts>();
  for (const [i, r] of facts.callers) callers.set(ms[i - 1]!, r);
  const w = new BatchWrites();
  const contactFacts: ContactFacts = {
    has: (nick, peer) => facts.contacts.has(`${nick} ${peer}`),
    count: (nick) => facts.contactCounts.get(nick) ?? 0,
  };
  // The callers' checks, all at once (a rate limit on Redis is one pipelined round trip), under
  // the locks, before anything is decided.
  const refused = await Promise.all(
    pending.map(async (p): Promise<{ refused: unknown } | null> => {
      try {
        await p.admit(facts.target(p.send), callers.get(p.send));
        return null;
      } catch (e) {
        return { refused: e };
      }
    }),
  );
  function decide(m: SendInput): SendResult {
    const decided = decideSend(m, facts.prior.get(m.id) ?? null, facts.target(m));
    if (decided) return decided;
    const envelope: Envelope = { id: m.id, to: m.to, from: m.from, keyId: m.keyId, iv: m.iv, ct: m.ct, ts: m.now };
    const json = envelopeJson(envelope);
    facts.prior.set(m.id, { sender: m.from, ts: m.now });
    w.envelopes.id.push(m.id);
    w.envelopes.sender.push(m.from);
    w.envelopes.ts.push(m.now);
    w.envelopes.json.push(json);
    let targets: CandidateDevice[];
    if ('room' in m.to) targets = roomTargets(facts.devicesInRoom(m.to.room), m.senderDevice);
    else {
      targets = dmTargets(facts.devicesOf(m.to.dm), facts.devicesOf(m.from), m.senderDevice);
      for (const [nick, peer] of firstDmContacts(m.from, m.to.dm, contactFacts)) {
        w.contacts.nick.push(nick);
        w.contacts.peer.push(peer);
        w.contacts.ts.push(m.now);
        facts.contactCounts.set(nick, contactFacts.count(nick) + 1);
        facts.contacts.add(`${nick} ${peer}`);
      }
    }
    for (const t of targets) {
      w.queue.device.push(t.deviceId);
      w.queue.envelope.push(w.envelopes.id.length);
      w.added.set(t.deviceId, (w.added.get(t.deviceId) ?? 0) + 1);
    }
    return {
      status: 'queued',
      envelope,
      json,
      targets: targets.map((t) => ({ deviceId: t.deviceId, nick: t.nick, pushable: t.pushable })),
      roomName: 'room' in m.to ? (facts.roomNames.get(m.to.room) ?? null) : null,
    };
  }
  // In arrival order: each decision sees what the earlier ones stored.
  const results = ms.map((m, i): SendOutcome => refused[i] ?? { result: decide(m) });
  if (w.envelopes.id.length === 0) {
    await q.run('COMMIT');
    return { outcomes: results, added: w.added };
  }

  await q.script(writeSends(w));
  return { outcomes: results, added: w.added };
}

/** Drops acknowledged entries from a device queue in one statement (`ack_envelopes`, migrations 2 and 5); run it in autocommit. */
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
  // The length rows, which acks and trims lock too (migration 7), in id order as the counts take them.
  await q.run(
    `SELECT 1 FROM queue_lengths WHERE device_id IN (SELECT device_id FROM queue WHERE envelope_id IN (${old})) ORDER BY device_id FOR UPDATE`,
    [cutoff],
  );
  // Lowered by what this very DELETE removed, whatever ran before it.
  const expired = await q.all<{ device_id: string; n: number }>(
    `WITH gone AS (DELETE FROM queue WHERE envelope_id IN (${old}) RETURNING device_id)
     SELECT device_id, COUNT(*) AS n FROM gone GROUP BY device_id ORDER BY device_id`,
    [cutoff],
  );
  for (const e of expired) await q.run('UPDATE queue_lengths SET queue_len = queue_len - $2 WHERE device_id = $1', [e.device_id, e.n]);
  return q.run('DELETE FROM envelopes WHERE ts < $1 AND NOT EXISTS (SELECT 1 FROM queue WHERE queue.envelope_id = envelopes.id)', [
    now - 2 * LIMITS.clockWindowMs,
  ]);
}
