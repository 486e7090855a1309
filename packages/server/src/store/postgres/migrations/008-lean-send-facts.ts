/**
 * PostgreSQL migration 8: `send_facts` runs only the statements a batch needs. Migration 5's
 * version ran all twelve for every batch: a batch of DMs also read rooms, members and room keys
 * for an empty list of rooms, and every batch looked for first contacts with a statement of its
 * own (a sort, a DISTINCT and a NOT EXISTS per pair) although nearly every DM goes to a peer
 * already in the sender's contacts. Now the room statements run only when the batch has a room
 * send, and the first-contact statement, with its advisory locks and counts, only when the
 * contact rows read just before are fewer than the batch's pairs. What the function returns, the
 * locks it takes and their order are those of migration 5; the statements that run are the same
 * statements (docs/BENCHMARKS.md).
 */
import type { PgMigration } from './migration.js';

export const LEAN_SEND_FACTS: PgMigration = {
  version: 8,
  name: 'send_facts skips the room statements for DM batches and the first-contact statement when every pair has its contact',
  sql: `
CREATE OR REPLACE FUNCTION send_facts(p_ids TEXT[], p_senders TEXT[], p_dms TEXT[], p_rooms TEXT[], p_key_ids TEXT[], p_contacts_lock INTEGER)
RETURNS TABLE (f_kind TEXT, f_a TEXT, f_b TEXT, f_n BIGINT, f_m BIGINT, f_flag BOOLEAN)
LANGUAGE plpgsql AS $fn$
DECLARE
  v_rooms TEXT[] := ARRAY(SELECT DISTINCT x.r FROM unnest(p_rooms) AS x(r) WHERE x.r IS NOT NULL);
  v_with_rooms BOOLEAN := cardinality(v_rooms) > 0;
  v_nick TEXT[];
  v_peer TEXT[];
  v_accounts TEXT[];
  v_owners TEXT[];
  v_who TEXT;
  v_contacts BIGINT;
BEGIN
  -- The batch's DM pairs, both ways, each once.
  SELECT array_agg(p.nick), array_agg(p.peer) INTO v_nick, v_peer
    FROM (SELECT t.s AS nick, t.d AS peer FROM unnest(p_senders, p_dms) AS t(s, d) WHERE t.d IS NOT NULL
          UNION
          SELECT t.d, t.s FROM unnest(p_senders, p_dms) AS t(s, d) WHERE t.d IS NOT NULL) p;
  v_accounts := ARRAY(SELECT DISTINCT x.n FROM unnest(v_nick) AS x(n));

  IF v_with_rooms THEN
    RETURN QUERY SELECT 'room'::TEXT, r.id, r.name, NULL::BIGINT, NULL::BIGINT, NULL::BOOLEAN
      FROM rooms r WHERE r.id = ANY (v_rooms) ORDER BY r.id FOR SHARE;
  END IF;
  RETURN QUERY SELECT 'live'::TEXT, ac.nick, NULL::TEXT, NULL::BIGINT, NULL::BIGINT, NULL::BOOLEAN
    FROM accounts ac WHERE ac.nick = ANY (v_accounts) AND ac.deleted_at IS NULL ORDER BY ac.nick FOR SHARE;

  IF v_with_rooms THEN
    RETURN QUERY SELECT 'members'::TEXT, rm.room_id, json_agg(json_build_array(rm.nick, rm.seq))::TEXT, NULL::BIGINT, NULL::BIGINT, NULL::BOOLEAN
      FROM room_members rm WHERE rm.room_id = ANY (v_rooms) GROUP BY rm.room_id;
    RETURN QUERY SELECT DISTINCT 'key'::TEXT, k.room_id, k.key_id, NULL::BIGINT, NULL::BIGINT, NULL::BOOLEAN
      FROM unnest(p_rooms, p_key_ids) AS t(r, k) JOIN room_key_ids k ON k.room_id = t.r AND k.key_id = t.k;
  END IF;
  RETURN QUERY SELECT 'prior'::TEXT, e.id, e.sender, e.ts, NULL::BIGINT, NULL::BOOLEAN
    FROM envelopes e WHERE e.id = ANY (p_ids);
  RETURN QUERY SELECT 'contact'::TEXT, c.nick, c.peer, NULL::BIGINT, NULL::BIGINT, NULL::BOOLEAN
    FROM unnest(v_nick, v_peer) AS p(nick, peer) JOIN contacts c ON c.nick = p.nick AND c.peer = p.peer;
  -- The pairs are distinct and a pair has at most one contact row: fewer rows than pairs means
  -- a first contact, whose nick is locked and its contacts counted, as in migration 5.
  GET DIAGNOSTICS v_contacts = ROW_COUNT;
  IF v_contacts < coalesce(cardinality(v_nick), 0) THEN
    FOR v_who IN SELECT w.nick FROM (SELECT DISTINCT p.nick FROM unnest(v_nick, v_peer) AS p(nick, peer)
                                     WHERE NOT EXISTS (SELECT 1 FROM contacts c WHERE c.nick = p.nick AND c.peer = p.peer)) w
                  ORDER BY w.nick COLLATE "C" LOOP
      PERFORM pg_advisory_xact_lock(p_contacts_lock, hashtext(v_who));
      RETURN QUERY SELECT 'count'::TEXT, v_who, NULL::TEXT, COUNT(*), NULL::BIGINT, NULL::BOOLEAN FROM contacts c WHERE c.nick = v_who;
    END LOOP;
  END IF;

  v_owners := v_accounts;
  IF v_with_rooms THEN
    v_owners := v_owners || ARRAY(SELECT DISTINCT rm.nick FROM room_members rm WHERE rm.room_id = ANY (v_rooms));
  END IF;
  RETURN QUERY SELECT 'devices'::TEXT, NULL::TEXT, json_agg(json_build_array(d.nick, d.id, d.seq, d.pushable) ORDER BY d.id)::TEXT,
                      NULL::BIGINT, NULL::BIGINT, NULL::BOOLEAN
    FROM (SELECT d.nick, d.id, d.seq, (d.push_endpoint IS NOT NULL AND NOT d.push_pending) AS pushable
            FROM devices d WHERE d.nick = ANY (v_owners) ORDER BY d.id FOR KEY SHARE) d;
END
$fn$;
`,
};
