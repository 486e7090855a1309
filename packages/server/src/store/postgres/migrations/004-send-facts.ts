/**
 * PostgreSQL migration 4: the send decides in TypeScript. `send_envelope` (migrations 2 and 3)
 * held a second copy of the send rules in PL/pgSQL and ran them once per send. It is replaced by
 * `send_facts`, which takes the locks of a whole batch of sends and reads, set-based, the facts
 * the rules of rules/send.ts decide on; the store then writes what they decided with one call of
 * `send_write` (messages.ts, sendMessages). Measured in docs/POSTGRES.md ("What a send costs inside PostgreSQL").
 */
import type { PgMigration } from './migration.js';

export const SEND_FACTS: PgMigration = {
  version: 4,
  name: 'the send rules leave the database: send_facts replaces send_envelope',
  sql: `
DROP FUNCTION send_envelope(TEXT, TEXT, TEXT, TEXT, TEXT, TEXT, BIGINT, TEXT, INTEGER, INTEGER, INTEGER);

-- Locks and facts for the sends of one transaction, given as parallel arrays (one element per
-- send; p_dms is NULL for a room send, p_rooms for a DM). The locks come in the order every
-- writer of these rows uses (store/postgres/locks.ts), each kind in key order, so two batches
-- never wait on each other in a ring:
--   1. the rooms, FOR SHARE: a members change, leave or deletion (FOR UPDATE) lands wholly
--      before or after the batch;
--   2. the live accounts of DM senders and recipients, FOR SHARE: an account deletion
--      (FOR UPDATE) either waits for the batch and removes what it queued, or runs first and
--      the batch finds the recipient gone;
--   3. the per-account contacts lock of each account that may gain a contact row (a DM pair
--      missing a row), as POST /api/contacts takes it, then that account's contact count;
--   4. every device that may be a target, FOR UPDATE: the lock that keeps queue_len exact and
--      makes a device's entries commit in seq order, so a replay paging by seq never skips one.
-- Each statement of a PL/pgSQL function gets a new snapshot, so what one reads after a lock
-- includes what committed while it waited.
--
-- One row per fact, told apart by f_kind:
--   room     f_a id, f_b name                  live     f_a nick
--   member   f_a room id, f_b nick, f_n join seq
--   key      f_a room id, f_b key id           prior    f_a envelope id, f_b sender, f_n ts
--   contact  f_a nick, f_b peer                count    f_a nick, f_n contacts
--   device   f_a nick, f_b id, f_n seq, f_m queue_len, f_flag pushable (a subscription, no push pending)
CREATE FUNCTION send_facts(p_ids TEXT[], p_senders TEXT[], p_dms TEXT[], p_rooms TEXT[], p_key_ids TEXT[], p_contacts_lock INTEGER)
RETURNS TABLE (f_kind TEXT, f_a TEXT, f_b TEXT, f_n BIGINT, f_m BIGINT, f_flag BOOLEAN)
LANGUAGE plpgsql AS $fn$
DECLARE
  v_rooms TEXT[] := ARRAY(SELECT DISTINCT x.r FROM unnest(p_rooms) AS x(r) WHERE x.r IS NOT NULL);
  -- DM pairs in both directions: (nick, peer) rows a first DM may add.
  v_nick TEXT[];
  v_peer TEXT[];
  v_accounts TEXT[];
  v_owners TEXT[];
  v_who TEXT;
BEGIN
  SELECT array_agg(p.nick), array_agg(p.peer) INTO v_nick, v_peer
    FROM (SELECT t.s AS nick, t.d AS peer FROM unnest(p_senders, p_dms) AS t(s, d) WHERE t.d IS NOT NULL
          UNION
          SELECT t.d, t.s FROM unnest(p_senders, p_dms) AS t(s, d) WHERE t.d IS NOT NULL) p;
  v_accounts := ARRAY(SELECT DISTINCT x.n FROM unnest(v_nick) AS x(n));

  RETURN QUERY SELECT 'room'::TEXT, r.id, r.name, NULL::BIGINT, NULL::BIGINT, NULL::BOOLEAN
    FROM rooms r WHERE r.id = ANY (v_rooms) ORDER BY r.id FOR SHARE;
  RETURN QUERY SELECT 'live'::TEXT, ac.nick, NULL::TEXT, NULL::BIGINT, NULL::BIGINT, NULL::BOOLEAN
    FROM accounts ac WHERE ac.nick = ANY (v_accounts) AND ac.deleted_at IS NULL ORDER BY ac.nick FOR SHARE;

  RETURN QUERY SELECT 'member'::TEXT, rm.room_id, rm.nick, rm.seq, NULL::BIGINT, NULL::BOOLEAN
    FROM room_members rm WHERE rm.room_id = ANY (v_rooms);
  RETURN QUERY SELECT DISTINCT 'key'::TEXT, k.room_id, k.key_id, NULL::BIGINT, NULL::BIGINT, NULL::BOOLEAN
    FROM unnest(p_rooms, p_key_ids) AS t(r, k) JOIN room_key_ids k ON k.room_id = t.r AND k.key_id = t.k;
  RETURN QUERY SELECT 'prior'::TEXT, e.id, e.sender, e.ts, NULL::BIGINT, NULL::BOOLEAN
    FROM envelopes e WHERE e.id = ANY (p_ids);
  RETURN QUERY SELECT 'contact'::TEXT, c.nick, c.peer, NULL::BIGINT, NULL::BIGINT, NULL::BOOLEAN
    FROM unnest(v_nick, v_peer) AS p(nick, peer) JOIN contacts c ON c.nick = p.nick AND c.peer = p.peer;

  -- Counting first keeps the contacts lock off every DM between accounts that are contacts
  -- already. Byte order, as JavaScript sorts these ASCII nicks (locks.ts, lockNicks).
  FOR v_who IN SELECT w.nick FROM (SELECT DISTINCT p.nick FROM unnest(v_nick, v_peer) AS p(nick, peer)
                                   WHERE NOT EXISTS (SELECT 1 FROM contacts c WHERE c.nick = p.nick AND c.peer = p.peer)) w
                ORDER BY w.nick COLLATE "C" LOOP
    PERFORM pg_advisory_xact_lock(p_contacts_lock, hashtext(v_who));
    RETURN QUERY SELECT 'count'::TEXT, v_who, NULL::TEXT, COUNT(*), NULL::BIGINT, NULL::BOOLEAN FROM contacts c WHERE c.nick = v_who;
  END LOOP;

  -- The members read above cannot change while the rooms are share-locked.
  v_owners := v_accounts || ARRAY(SELECT DISTINCT rm.nick FROM room_members rm WHERE rm.room_id = ANY (v_rooms));
  RETURN QUERY SELECT 'device'::TEXT, d.nick, d.id, d.seq, d.queue_len::BIGINT, (d.push_endpoint IS NOT NULL AND NOT d.push_pending)
    FROM devices d WHERE d.nick = ANY (v_owners) ORDER BY d.id FOR UPDATE;
END
$fn$;

-- The write of a send transaction: what the send rules decided (messages.ts), as parallel
-- arrays, in one call whose statements keep their plans for the connection's life.
--   p_ids, p_senders, p_ts, p_json   the envelopes to store
--   p_q_devices, p_q_ids, p_q_ts     their queue entries, in fan-out order, so a device's
--                                    entries get their seq in that order
--   p_len_devices, p_len_deltas      what each target queue gained, less what its cap dropped
--   p_c_nicks, p_c_peers, p_c_ts     the contact rows of first DMs
-- Every envelope must be stored. One that is not had its id taken by another transaction after
-- send_facts looked: the error rolls the send back, and the store runs it again, when the id
-- reads as used.
CREATE FUNCTION send_write(
  p_ids TEXT[], p_senders TEXT[], p_ts BIGINT[], p_json TEXT[],
  p_q_devices TEXT[], p_q_ids TEXT[], p_q_ts BIGINT[],
  p_len_devices TEXT[], p_len_deltas INTEGER[],
  p_c_nicks TEXT[], p_c_peers TEXT[], p_c_ts BIGINT[]
) RETURNS VOID LANGUAGE plpgsql AS $fn$
DECLARE
  v_stored INTEGER;
BEGIN
  INSERT INTO envelopes (id, sender, ts, json) SELECT * FROM unnest(p_ids, p_senders, p_ts, p_json) ON CONFLICT (id) DO NOTHING;
  GET DIAGNOSTICS v_stored = ROW_COUNT;
  IF v_stored <> cardinality(p_ids) THEN
    RAISE EXCEPTION 'an envelope id was taken while the send ran' USING ERRCODE = 'serialization_failure';
  END IF;
  INSERT INTO queue (device_id, envelope_id, ts)
    SELECT t.device_id, t.envelope_id, t.ts FROM unnest(p_q_devices, p_q_ids, p_q_ts) WITH ORDINALITY AS t(device_id, envelope_id, ts, i) ORDER BY t.i;
  UPDATE devices d SET queue_len = d.queue_len + x.delta FROM unnest(p_len_devices, p_len_deltas) AS x(id, delta) WHERE d.id = x.id;
  INSERT INTO contacts (nick, peer, created_at) SELECT * FROM unnest(p_c_nicks, p_c_peers, p_c_ts) ON CONFLICT (nick, peer) DO NOTHING;
END
$fn$;
`,
};
