/**
 * PostgreSQL migration 7: a device's queue length moves out of its `devices` row into a table of
 * its own, `queue_lengths`. Sends hold their target devices FOR KEY SHARE (migration 5), and the
 * counts of every instance raised `devices.queue_len` of those same rows every 100 ms: with two
 * instances sending to one room, each count had to lock rows that the other instance's sends
 * were holding, so PostgreSQL made a MultiXact of every such row and the counts waited for each
 * other. The counts took 40 % of PostgreSQL's CPU for room sends from two store instances
 * (docs/BENCHMARKS.md). A `queue_lengths` row is locked by the counts, the acks, the
 * purge and the trim only, never by a send.
 *
 * A device without a row has a length of 0. The row goes with its device (ON DELETE CASCADE).
 * The counts leave out devices deleted since; one deleted between that check and the insert of
 * its first row fails the counts' transaction, counts lost as in a crash (each device's trim at
 * its next stream open counts again).
 */
import type { PgMigration } from './migration.js';

export const QUEUE_LENGTHS: PgMigration = {
  version: 7,
  name: 'queue lengths in a table of their own, apart from the device rows that sends lock',
  sql: `
CREATE TABLE queue_lengths (
  device_id TEXT PRIMARY KEY REFERENCES devices (id) ON DELETE CASCADE,
  queue_len INTEGER NOT NULL
);
INSERT INTO queue_lengths (device_id, queue_len) SELECT id, queue_len FROM devices WHERE queue_len <> 0;
ALTER TABLE devices DROP COLUMN queue_len;

-- What committed sends added to each queue, in id order (two instances' counts take their rows
-- in the same order, so they never deadlock). Devices deleted since are left out (their entries
-- went with them). Returns the devices whose count is now past the cap: the caller trims them.
CREATE OR REPLACE FUNCTION queue_counted(p_devices TEXT[], p_added INTEGER[], p_cap INTEGER) RETURNS SETOF TEXT LANGUAGE plpgsql AS $fn$
BEGIN
  RETURN QUERY WITH counted AS (
    INSERT INTO queue_lengths AS l (device_id, queue_len)
      SELECT x.id, x.added FROM unnest(p_devices, p_added) AS x(id, added)
       WHERE EXISTS (SELECT 1 FROM devices d WHERE d.id = x.id) ORDER BY x.id
      ON CONFLICT (device_id) DO UPDATE SET queue_len = l.queue_len + EXCLUDED.queue_len
      RETURNING l.device_id, l.queue_len)
    SELECT c.device_id FROM counted c WHERE c.queue_len > p_cap;
END
$fn$;

-- Keeps the newest p_cap entries of a device's queue and sets its length to what is left,
-- counted, under the lock of its length row (which the counts and acks take too). Returns how
-- many it dropped.
CREATE OR REPLACE FUNCTION queue_trim(p_device TEXT, p_cap INTEGER) RETURNS INTEGER LANGUAGE plpgsql AS $fn$
DECLARE
  v_oldest_kept BIGINT;
  v_dropped INTEGER := 0;
BEGIN
  PERFORM 1 FROM devices WHERE id = p_device FOR KEY SHARE;
  IF NOT FOUND THEN
    RETURN 0;
  END IF;
  INSERT INTO queue_lengths AS l (device_id, queue_len) VALUES (p_device, 0)
    ON CONFLICT (device_id) DO UPDATE SET queue_len = l.queue_len;
  SELECT q.seq INTO v_oldest_kept FROM queue q WHERE q.device_id = p_device ORDER BY q.seq DESC OFFSET p_cap - 1 LIMIT 1;
  IF v_oldest_kept IS NOT NULL THEN
    DELETE FROM queue WHERE device_id = p_device AND seq < v_oldest_kept;
    GET DIAGNOSTICS v_dropped = ROW_COUNT;
  END IF;
  UPDATE queue_lengths SET queue_len = (SELECT COUNT(*) FROM queue q WHERE q.device_id = p_device) WHERE device_id = p_device;
  RETURN v_dropped;
END
$fn$;

-- The length row is taken (made if the device's sends were not counted yet, so that the count
-- that comes later and this ack add up) and locked before the entries go, as the trim does, so
-- an ack and a trim of one device run one after the other. The device row is held first, as the
-- sends hold it, so that its deletion cannot come between.
CREATE OR REPLACE FUNCTION ack_envelopes(p_device TEXT, p_ids TEXT[]) RETURNS INTEGER LANGUAGE plpgsql AS $fn$
DECLARE
  v_n INTEGER;
BEGIN
  PERFORM 1 FROM devices WHERE id = p_device FOR KEY SHARE;
  IF NOT FOUND THEN
    RETURN 0;
  END IF;
  INSERT INTO queue_lengths AS l (device_id, queue_len) VALUES (p_device, 0)
    ON CONFLICT (device_id) DO UPDATE SET queue_len = l.queue_len;
  DELETE FROM queue WHERE device_id = p_device AND envelope_id = ANY (p_ids);
  GET DIAGNOSTICS v_n = ROW_COUNT;
  IF v_n > 0 THEN
    UPDATE queue_lengths SET queue_len = queue_len - v_n WHERE device_id = p_device;
  END IF;
  RETURN v_n;
END
$fn$;
`,
};
