/**
 * PostgreSQL migration 10: the attachment store, the same tables as SQLite's migration 7. Parts
 * are BYTEA rows, so every instance serves every file and a dump carries them. `bytes` is what the
 * parts hold now (the quota sums it through the uploader index); `version` counts part writes, so
 * a finish knows that the parts it hashed are still the stored ones.
 *
 * A part's write is one call of `put_attachment_part`, one round trip in its own transaction
 * instead of the eight statements of its checks and writes: a 25 MB file is a thousand parts.
 * It takes the uploader's advisory lock (namespace 4 of locks.ts), so parts sent at once by
 * several instances cannot together pass the quota, and answers 'ok' or the refusal's code.
 */
import type { PgMigration } from './migration.js';

export const ATTACHMENTS: PgMigration = {
  version: 10,
  name: 'attachments',
  sql: `
CREATE TABLE attachments (
  id TEXT PRIMARY KEY,
  uploader TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  finished_at BIGINT,
  size BIGINT,
  sha256 BYTEA,
  bytes BIGINT NOT NULL DEFAULT 0,
  version BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX attachments_uploader ON attachments (uploader) INCLUDE (bytes);
CREATE INDEX attachments_unfinished ON attachments (created_at) WHERE finished_at IS NULL;
CREATE INDEX attachments_finished ON attachments (finished_at) WHERE finished_at IS NOT NULL;
CREATE TABLE attachment_parts (
  attachment_id TEXT NOT NULL,
  n INTEGER NOT NULL,
  data BYTEA NOT NULL,
  PRIMARY KEY (attachment_id, n)
);
-- Random ciphertext does not compress: storing it as it is spares a compression attempt per part.
ALTER TABLE attachment_parts ALTER COLUMN data SET STORAGE EXTERNAL;

CREATE FUNCTION put_attachment_part(p_id TEXT, p_nick TEXT, p_n INTEGER, p_data BYTEA, p_now BIGINT, p_quota BIGINT)
RETURNS TEXT LANGUAGE plpgsql AS $fn$
DECLARE
  v_uploader TEXT;
  v_finished BIGINT;
  v_exists BOOLEAN;
  v_before BIGINT := 0;
  v_used BIGINT;
BEGIN
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
