/**
 * PostgreSQL migration 12: a part from a session the instance remembers confirms that session in
 * its own call, as a send does (migration 9), so such a part costs no per-request lookup. This is
 * an overload with one more argument: migration 11's function stays, unchanged, for parts whose
 * caller was looked up, and for an instance of the previous release running beside this one
 * during an upgrade. A session row is matched on its id and nick; its idle expiry is the
 * instance's to judge, as with the per-request lookup.
 */
import type { PgMigration } from './migration.js';

export const PART_SESSION: PgMigration = {
  version: 12,
  name: 'a part confirms a remembered session',
  sql: `
CREATE FUNCTION put_attachment_part(p_id TEXT, p_nick TEXT, p_n INTEGER, p_data BYTEA, p_now BIGINT, p_quota BIGINT, p_session TEXT)
RETURNS TEXT LANGUAGE plpgsql AS $fn$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM sessions WHERE id = p_session AND nick = p_nick) THEN RETURN 'unauthenticated'; END IF;
  RETURN put_attachment_part(p_id, p_nick, p_n, p_data, p_now, p_quota);
END
$fn$;
`,
};
