/**
 * PostgreSQL migration 6: `send_write` takes each queue entry as its device and the position of
 * its envelope in the batch, instead of its device, envelope id and ts. A room message queues one
 * entry per member device, and each entry repeated the 26 characters of the envelope's id and
 * the 13 digits of its ts in the statement's text: for a room of 100 devices about 6 KB of
 * literals per message for the service to escape and PostgreSQL to parse, against 2.5 KB now
 * (docs/BENCHMARKS.md). The entries and their order are the same.
 */
import type { PgMigration } from './migration.js';

export const COMPACT_SEND_WRITE: PgMigration = {
  version: 6,
  name: 'send_write takes queue entries as device and envelope position',
  sql: `
DROP FUNCTION send_write(TEXT[], TEXT[], BIGINT[], TEXT[], TEXT[], TEXT[], BIGINT[], TEXT[], TEXT[], BIGINT[]);

-- The write of a send transaction (messages.ts): as migration 5's, but a queue entry is
-- p_q_devices[i] and p_q_envelopes[i], the 1-based position in p_ids of its envelope, whose id
-- and ts it takes. Entries are inserted in the order given, so a device's entries get their seq
-- in fan-out order.
CREATE FUNCTION send_write(
  p_ids TEXT[], p_senders TEXT[], p_ts BIGINT[], p_json TEXT[],
  p_q_devices TEXT[], p_q_envelopes INTEGER[],
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
    SELECT t.device_id, p_ids[t.e], p_ts[t.e] FROM unnest(p_q_devices, p_q_envelopes) WITH ORDINALITY AS t(device_id, e, i) ORDER BY t.i;
  INSERT INTO contacts (nick, peer, created_at) SELECT * FROM unnest(p_c_nicks, p_c_peers, p_c_ts) ON CONFLICT (nick, peer) DO NOTHING;
END
$fn$;
`,
};
