/**
 * Numbered migrations of the SQLite store. Each runs in its own transaction and is recorded in
 * `schema_migrations`; a database whose newest recorded version is unknown to this build was
 * written by a newer version, and the store refuses to open it rather than guess.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const SQLITE_MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: 'initial schema',
    sql: `
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

-- A deleted account keeps its row with deleted_at set and its key material wiped: the nick is retired.
CREATE TABLE accounts (
  nick TEXT PRIMARY KEY,
  auth_key_hash BLOB,
  kdf TEXT,
  public_key TEXT,
  encrypted_key TEXT,
  created_at INTEGER NOT NULL,
  deleted_at INTEGER
);

CREATE TABLE invites (
  code TEXT PRIMARY KEY,
  uses_left INTEGER NOT NULL,
  expires_at INTEGER,
  created_at INTEGER NOT NULL
);

-- id is the hex SHA-256 of the session token; the token itself is never stored.
CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  nick TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  last_used_at INTEGER NOT NULL
);
CREATE INDEX sessions_nick ON sessions (nick);
CREATE INDEX sessions_last_used ON sessions (last_used_at);

CREATE TABLE devices (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  nick TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  last_seen_at INTEGER,
  push_endpoint TEXT,
  push_p256dh TEXT,
  push_auth TEXT,
  push_pending INTEGER NOT NULL DEFAULT 0,
  queue_len INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX devices_nick ON devices (nick, seq);

CREATE TABLE contacts (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  nick TEXT NOT NULL,
  peer TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  UNIQUE (nick, peer)
);
CREATE INDEX contacts_peer ON contacts (peer);

CREATE TABLE rooms (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  owner TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  needs_rekey INTEGER NOT NULL DEFAULT 0
);

-- seq orders members by join time: ownership passes to the smallest seq.
CREATE TABLE room_members (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  room_id TEXT NOT NULL,
  nick TEXT NOT NULL,
  UNIQUE (room_id, nick)
);
CREATE INDEX room_members_nick ON room_members (nick);

-- Every key id a room ever used, so that a key id is never reused and old keys stay valid for sending.
CREATE TABLE room_key_ids (
  room_id TEXT NOT NULL,
  key_id TEXT NOT NULL,
  PRIMARY KEY (room_id, key_id)
) WITHOUT ROWID;

CREATE TABLE room_keys (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  room_id TEXT NOT NULL,
  member TEXT NOT NULL,
  key_id TEXT NOT NULL,
  from_nick TEXT NOT NULL,
  iv TEXT NOT NULL,
  ct TEXT NOT NULL
);
CREATE INDEX room_keys_member ON room_keys (room_id, member, seq);

-- The envelope as JSON, serialised once; kept while queued anywhere and while its id may be retried.
CREATE TABLE envelopes (
  id TEXT PRIMARY KEY,
  sender TEXT NOT NULL,
  ts INTEGER NOT NULL,
  json TEXT NOT NULL
);
CREATE INDEX envelopes_ts ON envelopes (ts);

CREATE TABLE queue (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  device_id TEXT NOT NULL,
  envelope_id TEXT NOT NULL,
  ts INTEGER NOT NULL,
  UNIQUE (envelope_id, device_id)
);
CREATE INDEX queue_device ON queue (device_id, seq);
CREATE INDEX queue_ts ON queue (ts);
`,
  },
  {
    version: 2,
    name: 'queue entries found by age through their envelope',
    // A queue entry's ts is always its envelope's ts, and envelopes_ts already orders envelopes
    // by it: the purge finds old entries through the envelopes, and every enqueue stops paying
    // for one more index.
    sql: 'DROP INDEX queue_ts;',
  },
  {
    version: 3,
    name: 'queue lengths kept in memory',
    // Keeping devices.queue_len exact costs a scattered row update per target on every send; the
    // store counts a device's queue once instead and keeps the count in memory (queue-counts.ts).
    sql: 'ALTER TABLE devices DROP COLUMN queue_len;',
  },
  {
    version: 4,
    name: 'queue entries of a device found in memory',
    // The (device_id, seq) index put every target's new entry on a page of its own, written to
    // the WAL at each commit: half the CPU of a room fan-out. The store keeps each device's
    // seqs in memory instead (queue-index.ts) and reaches entries by seq or by
    // (envelope_id, device_id).
    sql: 'DROP INDEX queue_device;',
  },
  {
    version: 5,
    name: 'envelopes keyed by time, queue seqs without sqlite_sequence',
    // Two b-trees less written at every commit (a quarter of the WAL of a small commit):
    // - envelopes_ts: an envelope's rowid is now its time, ts × 1024 + n (time-keys.ts), so old
    //   envelopes are a range of the table. Envelopes kept from before get their key here, in
    //   the order they came; past 1,024 in one millisecond (none in practice) SQLite picks one
    //   after every row (purged late, never early).
    // - AUTOINCREMENT on queue.seq, which updated sqlite_sequence at every send. A seq only
    //   orders the entries that exist (a replay always starts from the oldest), and a new rowid
    //   is above every existing one without it. A seq can now be used again after the newest
    //   entry is gone, so every statement that names entries by seq names their device too.
    sql: `
CREATE TABLE envelopes_v5 (
  id TEXT PRIMARY KEY,
  sender TEXT NOT NULL,
  ts INTEGER NOT NULL,
  json TEXT NOT NULL
);
INSERT INTO envelopes_v5 (rowid, id, sender, ts, json)
  SELECT CASE WHEN n < 1024 THEN ts * 1024 + n END, id, sender, ts, json
  FROM (SELECT ROW_NUMBER() OVER (PARTITION BY ts ORDER BY rowid) - 1 AS n, rowid AS r, id, sender, ts, json FROM envelopes)
  ORDER BY n >= 1024, r;
DROP TABLE envelopes;
ALTER TABLE envelopes_v5 RENAME TO envelopes;

CREATE TABLE queue_v5 (
  seq INTEGER PRIMARY KEY,
  device_id TEXT NOT NULL,
  envelope_id TEXT NOT NULL,
  ts INTEGER NOT NULL,
  UNIQUE (envelope_id, device_id)
);
INSERT INTO queue_v5 (seq, device_id, envelope_id, ts) SELECT seq, device_id, envelope_id, ts FROM queue;
DROP TABLE queue;
ALTER TABLE queue_v5 RENAME TO queue;
`,
  },
  {
    version: 6,
    name: 'queue entries keyed by their envelope',
    // One b-tree for the queue instead of two: an entry is its envelope's time key (the
    // envelope's rowid, time-keys.ts) and its device, and that pair is the table's key. The
    // (envelope_id, device_id) index, which acks used, cost each target a second b-tree insert
    // by a 26-character text key and its page in the WAL at every commit: without it the embedded
    // store's sends took 1–3.5 µs and their acks 4–5 µs less a DM (docs/BENCHMARKS.md),
    // and an entry 30 bytes of the file instead of 108. Acks reach their entries through
    // the envelopes' id key; the purge takes old entries as a range of the key; each device's
    // entries are known in memory by their keys (queue-index.ts), oldest first. Entries whose
    // envelope is gone (none are made) could never be replayed, and are not kept.
    sql: `
CREATE TABLE queue_v6 (
  envelope_key INTEGER NOT NULL,
  device_id TEXT NOT NULL,
  PRIMARY KEY (envelope_key, device_id)
) WITHOUT ROWID;
INSERT INTO queue_v6 (envelope_key, device_id)
  SELECT e.rowid, q.device_id FROM queue q JOIN envelopes e ON e.id = q.envelope_id;
DROP TABLE queue;
ALTER TABLE queue_v6 RENAME TO queue;
`,
  },
  {
    version: 7,
    name: 'attachments',
    // Opaque ciphertext in numbered parts, kept in the store so that backups and the move to
    // PostgreSQL carry it. `bytes` is what the parts hold now (the quota sums it through the
    // uploader index alone); `version` counts part writes, so a finish knows that the parts it
    // hashed are still the stored ones.
    sql: `
CREATE TABLE attachments (
  id TEXT PRIMARY KEY,
  uploader TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  finished_at INTEGER,
  size INTEGER,
  sha256 BLOB,
  bytes INTEGER NOT NULL DEFAULT 0,
  version INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX attachments_uploader ON attachments (uploader, bytes);
CREATE INDEX attachments_unfinished ON attachments (created_at) WHERE finished_at IS NULL;
CREATE INDEX attachments_finished ON attachments (finished_at) WHERE finished_at IS NOT NULL;
CREATE TABLE attachment_parts (
  attachment_id TEXT NOT NULL,
  n INTEGER NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY (attachment_id, n)
);
`,
  },
];
