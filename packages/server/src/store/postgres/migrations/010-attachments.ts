/**
 * PostgreSQL migration 10: the attachment store, the same tables as SQLite's migration 7. Parts
 * are BYTEA rows, so every instance serves every file and a dump carries them. `bytes` is what the
 * parts hold now (the quota sums it through the uploader index); `version` counts part writes, so
 * a finish knows that the parts it hashed are still the stored ones.
 */
import type { PgMigration } from '../migrations.js';

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
`,
};
