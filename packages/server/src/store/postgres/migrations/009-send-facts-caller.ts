/**
 * PostgreSQL migration 9: `send_facts` also reads the callers of sends that carry their session.
 * A send from a session the instance remembers (SendInput.session) has its session and its
 * device's owner read in the send's first round trip. That read was a statement of its own after
 * `send_facts`, its values written into it as literals, so PostgreSQL planned it anew for every
 * batch: 122–125 µs of planning and about 50 µs of execution, against about 520 µs for all of
 * `send_facts` (docs/BENCHMARKS.md). Inside a function the statement is prepared once per
 * connection and its plan kept.
 *
 * This is an overload with two more arrays: the function of migration 8 stays, unchanged, for
 * batches without such a send, and for an instance of the previous release still running beside
 * this one during an upgrade. It returns migration 8's facts, then a `caller` fact per send with a
 * session: f_n the send's 1-based position in the batch, f_a the session's nick and f_b the
 * device's owner (each NULL when there is no such row). A session row is matched on its id alone:
 * the caller's checks compare its nick with the send's sender, and the session's idle expiry is
 * theirs to judge, as with the per-request lookup.
 */
import type { PgMigration } from './migration.js';

export const SEND_FACTS_CALLER: PgMigration = {
  version: 9,
  name: 'send_facts reads the session and device of sends that carry their session',
  sql: `
CREATE OR REPLACE FUNCTION send_facts(p_ids TEXT[], p_senders TEXT[], p_dms TEXT[], p_rooms TEXT[], p_key_ids TEXT[], p_contacts_lock INTEGER,
                                      p_sessions TEXT[], p_devices TEXT[])
RETURNS TABLE (f_kind TEXT, f_a TEXT, f_b TEXT, f_n BIGINT, f_m BIGINT, f_flag BOOLEAN)
LANGUAGE plpgsql AS $fn$
BEGIN
  RETURN QUERY SELECT * FROM send_facts(p_ids, p_senders, p_dms, p_rooms, p_key_ids, p_contacts_lock);
  RETURN QUERY SELECT 'caller'::TEXT, s.nick, d.nick, t.i, NULL::BIGINT, NULL::BOOLEAN
    FROM unnest(p_sessions, p_devices) WITH ORDINALITY AS t(sid, did, i)
    LEFT JOIN sessions s ON s.id = t.sid
    LEFT JOIN devices d ON d.id = t.did
   WHERE t.sid IS NOT NULL;
END
$fn$;
`,
};
