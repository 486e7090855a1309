/**
 * PostgreSQL migration 3: a cheaper send, with the same rules and locks. Measured in
 * docs/POSTGRES.md ("What a send costs inside PostgreSQL").
 * - Each queue entry is written to two indexes instead of four. The primary key becomes
 *   (device_id, seq), the order a replay reads, replacing both the lone `seq` key and
 *   `queue_device`; `queue_ts` goes, since an entry's ts is its envelope's, and the purge finds
 *   old entries through `envelopes_ts` as the SQLite store does (its migration 2).
 * - `send_envelope` updates queue_len finding the target devices by their unique id. Migration
 *   2's version joined the inserted queue rows back to devices, which PostgreSQL planned, while
 *   the table was small, as a hash semi join over a scan of the whole table, once per send.
 * - The room row is share-locked and its name read in one statement instead of two.
 * - The cap is looked at per target only when the longest target queue is at the cap, and its
 *   DELETE names the device, as the new primary key needs.
 */
import type { PgMigration } from './migration.js';

export const CHEAPER_SEND: PgMigration = {
  version: 3,
  name: 'a cheaper send: queue_len by device id, two queue indexes fewer',
  sql: `
DROP INDEX queue_ts;
DROP INDEX queue_device;
ALTER TABLE queue DROP CONSTRAINT queue_pkey;
ALTER TABLE queue ADD PRIMARY KEY (device_id, seq);

CREATE OR REPLACE FUNCTION send_envelope(
  p_id TEXT,
  p_from TEXT,
  p_dm TEXT,
  p_room TEXT,
  p_key_id TEXT,
  p_sender_device TEXT,
  p_ts BIGINT,
  p_json TEXT,
  p_contacts_lock INTEGER,
  p_contacts_limit INTEGER,
  p_queue_cap INTEGER,
  OUT outcome TEXT,
  OUT prior_ts BIGINT,
  OUT room_name TEXT,
  OUT target_devices TEXT[],
  OUT target_nicks TEXT[],
  OUT target_pushable BOOLEAN[]
) LANGUAGE plpgsql AS $fn$
DECLARE
  v_refusal TEXT;
  v_dm_live BOOLEAN := FALSE;
  v_live RECORD;
  v_sender TEXT;
  v_known BIGINT;
  v_pair TEXT[];
  v_lens INTEGER[];
  v_n BIGINT;
  v_longest INTEGER;
BEGIN
  -- Rights are checked again inside the transaction: membership may have changed since step 5.
  -- The room row or the two accounts are share-locked, so a concurrent members change, leave,
  -- room or account deletion lands wholly before or wholly after this send.
  IF p_room IS NOT NULL THEN
    SELECT name INTO room_name FROM rooms WHERE id = p_room FOR SHARE;
    IF NOT EXISTS (SELECT 1 FROM room_members WHERE room_id = p_room AND nick = p_from) THEN
      v_refusal := 'not_member';
    ELSIF NOT EXISTS (SELECT 1 FROM room_key_ids WHERE room_id = p_room AND key_id = p_key_id) THEN
      v_refusal := 'unknown_key';
    END IF;
  ELSE
    -- The live ones of the two accounts, share-locked in nick order like every writer that adds
    -- rows naming an account (locks.ts, liveAccounts): account deletion takes the row FOR UPDATE,
    -- so it either waits for this send and removes what it queued, or runs first and the send
    -- finds the recipient gone.
    FOR v_live IN SELECT nick FROM accounts WHERE nick = ANY (ARRAY[p_from, p_dm]) AND deleted_at IS NULL ORDER BY nick FOR SHARE LOOP
      IF v_live.nick = p_dm THEN
        v_dm_live := TRUE;
      END IF;
    END LOOP;
    IF NOT v_dm_live THEN
      v_refusal := 'unknown_user';
    ELSIF p_dm = p_from THEN
      v_refusal := 'self';
    END IF;
  END IF;

  -- A used id is answered before any refusal (a retry stays a retry after its sender left the
  -- room); looking for it only when needed saves a lookup on every new envelope.
  IF v_refusal IS NOT NULL THEN
    SELECT sender, ts INTO v_sender, prior_ts FROM envelopes WHERE id = p_id;
    IF NOT FOUND THEN
      outcome := v_refusal;
    ELSIF v_sender = p_from THEN
      outcome := 'retry';
    ELSE
      outcome := 'id_conflict';
      prior_ts := NULL;
    END IF;
    RETURN;
  END IF;

  -- An id already used, or two sends of one id at once: the primary key lets one in; the other
  -- (after waiting for it to commit) answers as a retry or a conflict, having written nothing.
  -- The lookup is a new statement, so it sees the row the winner committed.
  INSERT INTO envelopes (id, sender, ts, json) VALUES (p_id, p_from, p_ts, p_json) ON CONFLICT (id) DO NOTHING;
  IF NOT FOUND THEN
    SELECT sender, ts INTO v_sender, prior_ts FROM envelopes WHERE id = p_id;
    IF NOT FOUND THEN
      -- Gone again between the conflict and the lookup (purged): nothing was written, and
      -- running the send again is safe, which the caller does for this error code.
      RAISE EXCEPTION 'envelope % vanished after a conflict', p_id USING ERRCODE = 'serialization_failure';
    END IF;
    IF v_sender = p_from THEN
      outcome := 'retry';
    ELSE
      outcome := 'id_conflict';
      prior_ts := NULL;
    END IF;
    RETURN;
  END IF;

  IF p_room IS NULL THEN
    -- The first DM between two accounts makes each a contact of the other, while there is room.
    -- Counting first keeps the advisory locks off every later DM of the pair.
    SELECT COUNT(*) INTO v_known FROM contacts WHERE (nick = p_from AND peer = p_dm) OR (nick = p_dm AND peer = p_from);
    IF v_known < 2 THEN
      -- The per-account contacts limit: count-then-insert is serialised per account by an advisory
      -- lock (locks.ts, lockNicks), the two taken in sorted order (byte order, as JavaScript sorts
      -- these ASCII nicks), so two transactions never wait on each other in a ring.
      IF p_from COLLATE "C" < p_dm COLLATE "C" THEN
        v_pair := ARRAY[p_from, p_dm];
      ELSE
        v_pair := ARRAY[p_dm, p_from];
      END IF;
      PERFORM pg_advisory_xact_lock(p_contacts_lock, hashtext(v_pair[1]));
      PERFORM pg_advisory_xact_lock(p_contacts_lock, hashtext(v_pair[2]));
      -- Adds the peer to each side's contacts when absent and there is room. A contact added at
      -- the same moment by POST /api/contacts makes the row exist either way.
      FOR i IN 1..2 LOOP
        v_pair := CASE i WHEN 1 THEN ARRAY[p_from, p_dm] ELSE ARRAY[p_dm, p_from] END;
        IF NOT EXISTS (SELECT 1 FROM contacts WHERE nick = v_pair[1] AND peer = v_pair[2]) THEN
          SELECT COUNT(*) INTO v_n FROM contacts WHERE nick = v_pair[1];
          IF v_n < p_contacts_limit THEN
            INSERT INTO contacts (nick, peer, created_at) VALUES (v_pair[1], v_pair[2], p_ts) ON CONFLICT (nick, peer) DO NOTHING;
          END IF;
        END IF;
      END LOOP;
    END IF;
  END IF;

  -- The target devices (message step 7), locked in id order, the order every writer of queues
  -- locks them in, then put into fan-out order: members by join order, devices oldest first.
  -- A device deleted while this waited for its lock is no longer returned. The lock is what
  -- keeps queue_len exact and makes a device's entries commit in the order of their seq, so a
  -- replay that pages by seq never skips an entry committed later.
  IF p_room IS NOT NULL THEN
    SELECT array_agg(t.id ORDER BY t.member_seq, t.device_seq), array_agg(t.nick ORDER BY t.member_seq, t.device_seq),
           array_agg(t.queue_len ORDER BY t.member_seq, t.device_seq), array_agg(t.pushable ORDER BY t.member_seq, t.device_seq),
           max(t.queue_len)
      INTO target_devices, target_nicks, v_lens, target_pushable, v_longest
      FROM (SELECT d.id, d.nick, d.queue_len, rm.seq AS member_seq, d.seq AS device_seq,
                   (d.push_endpoint IS NOT NULL AND NOT d.push_pending) AS pushable
            FROM room_members rm JOIN devices d ON d.nick = rm.nick
            WHERE rm.room_id = p_room AND d.id <> p_sender_device ORDER BY d.id FOR UPDATE OF d) t;
  ELSE
    SELECT array_agg(t.id ORDER BY t.device_seq), array_agg(t.nick ORDER BY t.device_seq), array_agg(t.queue_len ORDER BY t.device_seq),
           array_agg(t.pushable ORDER BY t.device_seq), max(t.queue_len)
      INTO target_devices, target_nicks, v_lens, target_pushable, v_longest
      FROM (SELECT d.id, d.nick, d.queue_len, d.seq AS device_seq, (d.push_endpoint IS NOT NULL AND NOT d.push_pending) AS pushable
            FROM devices d WHERE d.nick = p_dm OR (d.nick = p_from AND d.id <> p_sender_device) ORDER BY d.id FOR UPDATE) t;
  END IF;
  outcome := 'queued';
  IF target_devices IS NULL THEN
    target_devices := '{}';
    target_nicks := '{}';
    target_pushable := '{}';
    RETURN;
  END IF;

  -- The cap drops the oldest entries: the queue is a mailbox, not an archive. Counting what the
  -- DELETE removed keeps queue_len exact.
  FOR i IN 1..(CASE WHEN v_longest >= p_queue_cap THEN array_length(target_devices, 1) ELSE 0 END) LOOP
    IF v_lens[i] >= p_queue_cap THEN
      DELETE FROM queue WHERE device_id = target_devices[i]
        AND seq IN (SELECT q.seq FROM queue q WHERE q.device_id = target_devices[i] ORDER BY q.seq LIMIT v_lens[i] - p_queue_cap + 1);
      GET DIAGNOSTICS v_n = ROW_COUNT;
      UPDATE devices SET queue_len = queue_len - v_n WHERE id = target_devices[i];
    END IF;
  END LOOP;
  -- Entries are inserted in fan-out order, so their seq follows it.
  -- Every target gets its entry (the envelope is new, so no insert can conflict), and the devices
  -- are found by their unique id: an update joined to the inserted rows could be planned as a
  -- scan of the whole devices table.
  WITH added AS (INSERT INTO queue (device_id, envelope_id, ts) SELECT t.d, p_id, p_ts FROM unnest(target_devices) AS t(d))
  UPDATE devices SET queue_len = queue_len + 1 WHERE id = ANY (target_devices);
END
$fn$;
`,
};
