/**
 * PostgreSQL migration 13: each attachment counts at least one whole part (24,000 bytes, the
 * protocol's part size) against its uploader's quota, as on SQLite, so the quota also bounds how
 * many attachments an account can hold: one-byte uploads can no longer fill the tables for the
 * price of their bytes. `put_attachment_part` is migration 11's with that count; migration 12's
 * overload calls it and is unchanged.
 */
import type { PgMigration } from './migration.js';

export const PART_CHARGE: PgMigration = {
  version: 13,
  name: 'each attachment counts at least one part',
  sql: `
CREATE OR REPLACE FUNCTION put_attachment_part(p_id TEXT, p_nick TEXT, p_n INTEGER, p_data BYTEA, p_now BIGINT, p_quota BIGINT)
RETURNS TEXT LANGUAGE plpgsql AS $fn$
DECLARE
  v_uploader TEXT;
  v_finished BIGINT;
  v_bytes BIGINT := 0;
  v_exists BOOLEAN;
  v_before BIGINT := 0;
  v_others BIGINT;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  PERFORM pg_advisory_xact_lock(4, hashtext(p_nick));
  SELECT uploader, finished_at, bytes INTO v_uploader, v_finished, v_bytes FROM attachments WHERE id = p_id FOR UPDATE;
  v_exists := FOUND;
  IF v_exists THEN
    IF v_uploader <> p_nick THEN RETURN 'attachment_conflict'; END IF;
    IF v_finished IS NOT NULL THEN RETURN 'attachment_finished'; END IF;
    SELECT COALESCE(octet_length(data), 0) INTO v_before FROM attachment_parts WHERE attachment_id = p_id AND n = p_n;
    v_before := COALESCE(v_before, 0);
  ELSE
    v_bytes := 0;
  END IF;
  -- 24000: the protocol's part size (ATTACHMENT.partBytes), the least an attachment counts.
  SELECT COALESCE(SUM(GREATEST(bytes, 24000)), 0) INTO v_others FROM attachments WHERE uploader = p_nick AND id <> p_id;
  IF v_others + GREATEST(v_bytes - v_before + octet_length(p_data), 24000) > p_quota THEN RETURN 'quota_exceeded'; END IF;
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
