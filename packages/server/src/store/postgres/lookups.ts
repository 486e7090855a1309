/**
 * The per-request reads of the PostgreSQL store (a request's session, its X-Device's owner), all
 * coalesced (coalesce.ts) into one statement per round of the event loop: the sessions and the
 * device owners that the requests of a round ask for are answered together. The session check
 * asks for both at once (http/session.ts), so a request costs one lookup round trip, not two
 * one after the other. The statement joins `unnest(...) WITH ORDINALITY`, so it returns one row
 * per key in the keys' order, a missing row as NULLs (a key of the other kind probes its index
 * with NULL, which matches nothing at once).
 */
import type { SessionRecord } from '../types.js';
import { Coalescer } from './coalesce.js';
import type { Sql } from './db.js';

/** 's': a session id; 'd': a device id. */
interface LookupKey {
  kind: 's' | 'd';
  id: string;
}

interface LookupRow {
  session_id: string | null;
  nick: string | null;
  created_at: number | null;
  last_used_at: number | null;
}

export class Lookups {
  private readonly reads: Coalescer<LookupKey, LookupRow>;

  constructor(q: Sql) {
    this.reads = new Coalescer((keys) =>
      q.prepared<LookupRow>(
        'svc_lookups',
        `SELECT s.id AS session_id, COALESCE(s.nick, d.nick) AS nick, s.created_at, s.last_used_at
           FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t(kind, id, i)
           LEFT JOIN sessions s ON s.id = CASE WHEN t.kind = 's' THEN t.id END
           LEFT JOIN devices d ON d.id = CASE WHEN t.kind = 'd' THEN t.id END
          ORDER BY t.i`,
        [keys.map((k) => k.kind), keys.map((k) => k.id)],
      ),
    );
  }

  async session(id: string): Promise<SessionRecord | null> {
    const r = await this.reads.get({ kind: 's', id });
    return r.session_id === null ? null : { id: r.session_id, nick: r.nick!, createdAt: r.created_at!, lastUsedAt: r.last_used_at! };
  }

  async deviceOwner(id: string): Promise<string | null> {
    return (await this.reads.get({ kind: 'd', id })).nick;
  }
}
