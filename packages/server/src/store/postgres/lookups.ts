/**
 * The per-request reads of the PostgreSQL store, each coalesced (coalesce.ts): one statement per
 * round of the event loop answers every request of that round. Each statement joins
 * `unnest($n) WITH ORDINALITY`, so it returns one row per key in the keys' order, a missing
 * row as NULLs.
 */
import type { Target } from '@svc/protocol';
import type { SessionRecord } from '../types.js';
import type { TargetFacts } from '../../rules/send.js';
import { Coalescer } from './coalesce.js';
import type { Sql } from './db.js';

interface SendCheck {
  from: string;
  to: Target;
  keyId: string;
}

export class Lookups {
  readonly sessions: Coalescer<string, SessionRecord | null>;
  readonly deviceOwners: Coalescer<string, string | null>;
  readonly sendFacts: Coalescer<SendCheck, TargetFacts>;

  constructor(q: Sql) {
    this.sessions = new Coalescer(async (ids) => {
      const rows = await q.all<{ id: string | null; nick: string; created_at: number; last_used_at: number }>(
        `SELECT s.id, s.nick, s.created_at, s.last_used_at
           FROM unnest($1::text[]) WITH ORDINALITY AS t(id, i) LEFT JOIN sessions s ON s.id = t.id ORDER BY t.i`,
        [ids],
      );
      return rows.map((r) => (r.id === null ? null : { id: r.id, nick: r.nick, createdAt: r.created_at, lastUsedAt: r.last_used_at }));
    });

    this.deviceOwners = new Coalescer(async (ids) => {
      const rows = await q.all<{ nick: string | null }>(
        'SELECT d.nick FROM unnest($1::text[]) WITH ORDINALITY AS t(id, i) LEFT JOIN devices d ON d.id = t.id ORDER BY t.i',
        [ids],
      );
      return rows.map((r) => r.nick);
    });

    // Message step 5, outside the send's transaction (which reads them again under its locks):
    // the facts the send rules (rules/send.ts) decide on.
    this.sendFacts = new Coalescer(async (checks) => {
      const rows = await q.all<{ member: boolean; key: boolean; live: boolean }>(
        `SELECT t.room IS NOT NULL AND EXISTS (SELECT 1 FROM room_members m WHERE m.room_id = t.room AND m.nick = t.sender) AS member,
                t.room IS NOT NULL AND EXISTS (SELECT 1 FROM room_key_ids k WHERE k.room_id = t.room AND k.key_id = t.key_id) AS key,
                t.dm IS NOT NULL AND EXISTS (SELECT 1 FROM accounts a WHERE a.nick = t.dm AND a.deleted_at IS NULL) AS live
           FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS t(sender, dm, room, key_id, i) ORDER BY t.i`,
        [
          checks.map((c) => c.from),
          checks.map((c) => ('dm' in c.to ? c.to.dm : null)),
          checks.map((c) => ('room' in c.to ? c.to.room : null)),
          checks.map((c) => c.keyId),
        ],
      );
      return rows.map((r, i): TargetFacts =>
        'room' in checks[i]!.to ? { room: true, senderIsMember: r.member, keyIsKnown: r.key } : { room: false, recipientIsLive: r.live },
      );
    });
  }
}
