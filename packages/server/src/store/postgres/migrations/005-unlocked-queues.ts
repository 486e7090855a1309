/**
 * PostgreSQL migration 5: a send no longer locks its target devices FOR UPDATE, nor counts their
 * queues. Migration 4's send_facts took every target device FOR UPDATE and send_write raised
 * their queue_len, so two sends to one room (two instances, or a send beside an ack) ran one
 * after the other, each waiting for the other's commit, and a batch of ten room sends updated
 * 400 device rows (docs/BENCHMARKS.md). Now:
 *
 * - send_facts takes target devices FOR KEY SHARE, which sends share with each other and with
 *   every UPDATE of a device's columns; only a device's deletion waits for them (and they for
 *   it), so no queue entry is ever written for a device that is gone. It returns the members of
 *   each room and the devices of all owners as one JSON row each instead of a row per member and
 *   per device, which the service reads for a fifth of the cost.
 * - send_write writes envelopes, queue entries and contacts only. queue_len is raised after the
 *   commit, by queue_counted in a transaction of its own, for the sends of 100 ms at once
 *   (queue-counts.ts). It is a count that may lag: a crash before the count leaves it short, and
 *   an exact recount (queue_trim) between a send's commit and its count leaves it long. Neither
 *   drops an entry wrongly: queue_len only says when to look, and queue_trim, which drops, counts
 *   the queue itself. queue_trim runs when queue_len passes the cap and when the device opens its
 *   stream (device_connected), so a replay never carries more than the cap and the count is exact
 *   again. The cap is the SQLite store's rule (rules/send.ts, queueOverflow: the newest
 *   LIMITS.queuePerDevice entries stay), applied here by the statement that keeps them.
 * - A queue's order is its seq (the oldest go first); entries of concurrent sends may commit out
 *   of seq order. A replay still misses none: the stream is registered before its replay reads,
 *   so an entry committed after that is delivered live (domain/streams.ts).
 * - ack_envelopes, claimPush and the purge lock FOR NO KEY UPDATE, which does not wait for sends.
 */
import type { PgMigration } from './migration.js';

export const UNLOCKED_QUEUES: PgMigration = {
  version: 5,
  name: 'sends share their target devices: queue_len counted after the commit, the cap trimmed exactly',
  sql: `
-- Migration 4's send_facts with two changes. Target devices are locked FOR KEY SHARE instead of
-- FOR UPDATE. And the members of each room and the devices of all owners come as one row each,
-- a JSON array, where they came as a row per member and per device: a room of 50 members with
-- two devices each was 150 rows for the service to read, whatever the number of sends to it
-- in the batch; JSON.parse reads the array for a fifth of the cost. The kinds now:
--   room     f_a id, f_b name                  live     f_a nick
--   members  f_a room id, f_b [[nick, join seq], …]
--   key      f_a room id, f_b key id           prior    f_a envelope id, f_b sender, f_n ts
--   contact  f_a nick, f_b peer                count    f_a nick, f_n contacts
--   devices  f_b [[nick, id, seq, pushable], …] in id order (pushable: a subscription, no push pending)
CREATE OR REPLACE FUNCTION send_facts(p_ids TEXT[], p_senders TEXT[], p_dms TEXT[], p_rooms TEXT[], p_key_ids TEXT[], p_contacts_lock INTEGER)
RETURNS TABLE (f_kind TEXT, f_a TEXT, f_b TEXT, f_n BIGINT, f_m BIGINT, f_flag BOOLEAN)
LANGUAGE plpgsql AS $fn$
DECLARE
  v_rooms TEXT[] := ARRAY(SELECT DISTINCT x.r FROM unnest(p_rooms) AS x(r) WHERE x.r IS NOT NULL);
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

  RETURN QUERY SELECT 'members'::TEXT, rm.room_id, json_agg(json_build_array(rm.nick, rm.seq))::TEXT, NULL::BIGINT, NULL::BIGINT, NULL::BOOLEAN
    FROM room_members rm WHERE rm.room_id = ANY (v_rooms) GROUP BY rm.room_id;
  RETURN QUERY SELECT DISTINCT 'key'::TEXT, k.room_id, k.key_id, NULL::BIGINT, NULL::BIGINT, NULL::BOOLEAN
    FROM unnest(p_rooms, p_key_ids) AS t(r, k) JOIN room_key_ids k ON k.room_id = t.r AND k.key_id = t.k;
  RETURN QUERY SELECT 'prior'::TEXT, e.id, e.sender, e.ts, NULL::BIGINT, NULL::BOOLEAN
    FROM envelopes e WHERE e.id = ANY (p_ids);
  RETURN QUERY SELECT 'contact'::TEXT, c.nick, c.peer, NULL::BIGINT, NULL::BIGINT, NULL::BOOLEAN
    FROM unnest(v_nick, v_peer) AS p(nick, peer) JOIN contacts c ON c.nick = p.nick AND c.peer = p.peer;

  FOR v_who IN SELECT w.nick FROM (SELECT DISTINCT p.nick FROM unnest(v_nick, v_peer) AS p(nick, peer)
                                   WHERE NOT EXISTS (SELECT 1 FROM contacts c WHERE c.nick = p.nick AND c.peer = p.peer)) w
                ORDER BY w.nick COLLATE "C" LOOP
    PERFORM pg_advisory_xact_lock(p_contacts_lock, hashtext(v_who));
    RETURN QUERY SELECT 'count'::TEXT, v_who, NULL::TEXT, COUNT(*), NULL::BIGINT, NULL::BOOLEAN FROM contacts c WHERE c.nick = v_who;
  END LOOP;

  v_owners := v_accounts || ARRAY(SELECT DISTINCT rm.nick FROM room_members rm WHERE rm.room_id = ANY (v_rooms));
  RETURN QUERY SELECT 'devices'::TEXT, NULL::TEXT, json_agg(json_build_array(d.nick, d.id, d.seq, d.pushable) ORDER BY d.id)::TEXT,
                      NULL::BIGINT, NULL::BIGINT, NULL::BOOLEAN
    FROM (SELECT d.nick, d.id, d.seq, (d.push_endpoint IS NOT NULL AND NOT d.push_pending) AS pushable
            FROM devices d WHERE d.nick = ANY (v_owners) ORDER BY d.id FOR KEY SHARE) d;
END
$fn$;

-- Migration 4's send_write without the queue_len update (now queue_counted's, after the commit).
DROP FUNCTION send_write(TEXT[], TEXT[], BIGINT[], TEXT[], TEXT[], TEXT[], BIGINT[], TEXT[], INTEGER[], TEXT[], TEXT[], BIGINT[]);
CREATE FUNCTION send_write(
  p_ids TEXT[], p_senders TEXT[], p_ts BIGINT[], p_json TEXT[],
  p_q_devices TEXT[], p_q_ids TEXT[], p_q_ts BIGINT[],
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
  INSERT INTO contacts (nick, peer, created_at) SELECT * FROM unnest(p_c_nicks, p_c_peers, p_c_ts) ON CONFLICT (nick, peer) DO NOTHING;
END
$fn$;

-- What committed sends added to each queue. The rows are locked in id order, as every writer of
-- several devices locks them, and only for this statement's transaction. Returns the devices
-- whose count is now past the cap: the caller trims them.
CREATE FUNCTION queue_counted(p_devices TEXT[], p_added INTEGER[], p_cap INTEGER) RETURNS SETOF TEXT LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM 1 FROM devices WHERE id = ANY (p_devices) ORDER BY id FOR NO KEY UPDATE;
  RETURN QUERY WITH counted AS (
    UPDATE devices d SET queue_len = d.queue_len + x.added FROM unnest(p_devices, p_added) AS x(id, added)
      WHERE d.id = x.id RETURNING d.id, d.queue_len)
    SELECT c.id FROM counted c WHERE c.queue_len > p_cap;
END
$fn$;

-- Keeps the newest p_cap entries of a device's queue and sets queue_len to what is left,
-- counted. Returns how many it dropped.
CREATE FUNCTION queue_trim(p_device TEXT, p_cap INTEGER) RETURNS INTEGER LANGUAGE plpgsql AS $fn$
DECLARE
  v_oldest_kept BIGINT;
  v_dropped INTEGER := 0;
BEGIN
  PERFORM 1 FROM devices WHERE id = p_device FOR NO KEY UPDATE;
  IF NOT FOUND THEN
    RETURN 0;
  END IF;
  SELECT q.seq INTO v_oldest_kept FROM queue q WHERE q.device_id = p_device ORDER BY q.seq DESC OFFSET p_cap - 1 LIMIT 1;
  IF v_oldest_kept IS NOT NULL THEN
    DELETE FROM queue WHERE device_id = p_device AND seq < v_oldest_kept;
    GET DIAGNOSTICS v_dropped = ROW_COUNT;
  END IF;
  UPDATE devices SET queue_len = (SELECT COUNT(*) FROM queue q WHERE q.device_id = p_device) WHERE id = p_device;
  RETURN v_dropped;
END
$fn$;

-- A device opened its stream: no push is pending any more, and its queue is trimmed and counted
-- before the replay reads it.
CREATE FUNCTION device_connected(p_device TEXT, p_now BIGINT, p_cap INTEGER) RETURNS VOID LANGUAGE plpgsql AS $fn$
BEGIN
  UPDATE devices SET push_pending = FALSE, last_seen_at = p_now WHERE id = p_device;
  PERFORM queue_trim(p_device, p_cap);
END
$fn$;

CREATE OR REPLACE FUNCTION ack_envelopes(p_device TEXT, p_ids TEXT[]) RETURNS INTEGER LANGUAGE plpgsql AS $fn$
DECLARE
  v_n INTEGER;
BEGIN
  PERFORM 1 FROM devices WHERE id = p_device FOR NO KEY UPDATE;
  DELETE FROM queue WHERE device_id = p_device AND envelope_id = ANY (p_ids);
  GET DIAGNOSTICS v_n = ROW_COUNT;
  IF v_n > 0 THEN
    UPDATE devices SET queue_len = queue_len - v_n WHERE id = p_device;
  END IF;
  RETURN v_n;
END
$fn$;
`,
};
