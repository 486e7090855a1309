/**
 * PostgreSQL migration 11: a part's write commits without waiting for the WAL's flush
 * (docs/DESIGN.md). `put_attachment_part` is migration 10's, with one line more:
 * `synchronous_commit` is off for the rest of the part's own transaction. The part is committed,
 * seen by every instance and survives the service's process ending when its call returns; the
 * finish commits synchronously, and a synchronous commit flushes the WAL up to its own record, so
 * every part it hashed is on disk before it is answered. A part lost to a crash of PostgreSQL
 * itself makes the finish answer `attachment_mismatch`, and the client sends it again.
 */
import type { PgMigration } from './migration.js';

export const PART_COMMIT: PgMigration = {
  version: 11,
  name: 'part commit',
  sql: `
CREATE OR REPLACE FUNCTION put_attachment_part(p_id TEXT, p_nick TEXT, p_n INTEGER, p_data BYTEA, p_now BIGINT, p_quota BIGINT)
RETURNS TEXT LANGUAGE plpgsql AS $fn$
DECLARE
  v_uploader TEXT;
  v_finished BIGINT;
  v_exists BOOLEAN;
  v_before BIGINT := 0;
  v_used BIGINT;
BEGIN
  -- Local to the part's transaction (the call is a statement of its own): see the file's comment.
  PERFORM set_config('synchronous_commit', 'off', true);
  PERFORM pg_advisory_xact_lock(4, hashtext(p_nick));
  SELECT uploader, finished_at INTO v_uploader, v_finished FROM attachments WHERE id = p_id FOR UPDATE;
  v_exists := FOUND;
  IF v_exists THEN
    IF v_uploader <> p_nick THEN RETURN 'attachment_conflict'; END IF;
    IF v_finished IS NOT NULL THEN RETURN 'attachment_finished'; END IF;
    SELECT COALESCE(octet_length(data), 0) INTO v_before FROM attachment_parts WHERE attachment_id = p_id AND n = p_n;
    v_before := COALESCE(v_before, 0);
  END IF;
  SELECT COALESCE(SUM(bytes), 0) INTO v_used FROM attachments WHERE uploader = p_nick;
  IF v_used - v_before + octet_length(p_data) > p_quota THEN RETURN 'quota_exceeded'; END IF;
  IF NOT v_exists THEN
    -- Another account may make the same id at the same moment: the primary key settles it.
    INSERT INTO attachments (id, uploader, created_at) VALUES (p_id, p_nick, p_now) ON CONFLICT (id) DO NOTHING;
    IF NOT FOUND THEN RETURN 'attachment_conflict'; END IF;
  END IF;
  INSERT INTO attachment_parts (attachment_id, n, data) VALUES (p_id, p_n, p_data)
    ON CONFLICT (attachment_id, n) DO UPDATE SET data = EXCLUDED.data;
  UPDATE attachments SET bytes = bytes + octet_length(p_data) - v_before, version = version + 1 WHERE id = p_id;
  RETURN 'ok';
END
$fn$;
`,
};
