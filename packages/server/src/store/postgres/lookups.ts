/**
 * The per-request reads of the PostgreSQL store, each coalesced (coalesce.ts): one statement per
 * round of the event loop answers every request of that round. Each statement joins
 * `unnest($n) WITH ORDINALITY`, so it returns one row per key in the keys' order, a missing
 * row as NULLs.
 */
import type { SessionRecord } from '../types.js';
import { Coalescer } from './coalesce.js';
import type { Sql } from './db.js';

export class Lookups {
  readonly sessions: Coalescer<string, SessionRecord | null>;
  readonly deviceOwners: Coalescer<string, string | null>;

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
  }
}
