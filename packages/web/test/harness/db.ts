/**
 * Looks into the server's SQLite file from outside, read-only, for what no API shows: how many
 * envelopes wait in a device's queue, a room's key history and who holds its keys, whether an
 * account exists, and whether any plaintext was stored.
 */
import Database from 'better-sqlite3';
import { existsSync, readFileSync } from 'node:fs';

function withDb<T>(dbPath: string, read: (db: Database.Database) => T): T {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    return read(db);
  } finally {
    db.close();
  }
}

/** Whether the service has an account for `nick`: none, live, or deleted (its nick retired). */
export function accountState(dbPath: string, nick: string): 'none' | 'live' | 'deleted' {
  return withDb(dbPath, (db) => {
    const row = db.prepare('SELECT deleted_at FROM accounts WHERE nick = ?').get(nick) as { deleted_at: number | null } | undefined;
    return !row ? 'none' : row.deleted_at === null ? 'live' : 'deleted';
  });
}

/** Envelopes still queued for a device (removed by its acks). */
export function queueLength(dbPath: string, deviceId: string): number {
  return withDb(dbPath, (db) => (db.prepare('SELECT count(*) AS n FROM queue WHERE device_id = ?').get(deviceId) as { n: number }).n);
}

export interface RoomKeyState {
  id: string;
  /** Every key id the room ever used. */
  keyIds: string[];
  needsRekey: boolean;
  members: string[];
}

/** The room's open metadata as the server holds it, found by its (unencrypted) name. */
export function roomState(dbPath: string, name: string): RoomKeyState | undefined {
  return withDb(dbPath, (db) => {
    const room = db.prepare('SELECT id, needs_rekey FROM rooms WHERE name = ?').get(name) as { id: string; needs_rekey: number } | undefined;
    if (!room) return undefined;
    const keyIds = (db.prepare('SELECT key_id FROM room_key_ids WHERE room_id = ?').all(room.id) as { key_id: string }[]).map((r) => r.key_id);
    const members = (db.prepare('SELECT nick FROM room_members WHERE room_id = ? ORDER BY seq').all(room.id) as { nick: string }[]).map(
      (r) => r.nick,
    );
    return { id: room.id, keyIds, needsRekey: room.needs_rekey !== 0, members };
  });
}

/** Every member that holds a wrapped copy of one of the room's keys, as the server keeps them. */
export function keyHolders(dbPath: string, roomId: string): string[] {
  return withDb(dbPath, (db) =>
    (db.prepare('SELECT DISTINCT member FROM room_keys WHERE room_id = ? ORDER BY member').all(roomId) as { member: string }[]).map((r) => r.member),
  );
}

/**
 * The key ids of the room's envelopes accepted at or after `since` that the server still keeps
 * (it keeps an envelope while it is queued anywhere or its id may still be retried).
 */
export function envelopeKeyIds(dbPath: string, roomId: string, since: number): string[] {
  return withDb(dbPath, (db) => {
    const rows = db.prepare('SELECT json FROM envelopes WHERE ts >= ? ORDER BY ts').all(since) as { json: string }[];
    const envs = rows.map((r) => JSON.parse(r.json) as { to: { room?: string }; keyId: string });
    return envs.filter((e) => e.to.room === roomId).map((e) => e.keyId);
  });
}

/**
 * The texts among `texts` found in the raw bytes of the database and its write-ahead log, in
 * UTF-8 or UTF-16 (either byte order), whatever table, index or free page they might sit in.
 */
export function plaintextFound(dbPath: string, texts: string[]): string[] {
  const files = [dbPath, `${dbPath}-wal`].filter((f) => existsSync(f)).map((f) => readFileSync(f));
  const forms = (t: string) => [Buffer.from(t, 'utf8'), Buffer.from(t, 'utf16le'), Buffer.from(t, 'utf16le').swap16()];
  return texts.filter((t) => files.some((bytes) => forms(t).some((needle) => bytes.includes(needle))));
}

/**
 * Envelopes accepted at or after `since` into the private rooms named `name` whose only member is
 * `owner` (the history transfer's room of the account's own devices), as the server still keeps them.
 */
export function ownRoomEnvelopes(dbPath: string, owner: string, name: string, since: number): number {
  return withDb(dbPath, (db) => {
    const rooms = db.prepare('SELECT id FROM rooms WHERE name = ? AND owner = ?').all(name, owner) as { id: string }[];
    const ids = new Set(rooms.map((r) => r.id));
    const rows = db.prepare('SELECT json FROM envelopes WHERE ts >= ?').all(since) as { json: string }[];
    return rows.filter((r) => ids.has((JSON.parse(r.json) as { to: { room?: string } }).to.room ?? '')).length;
  });
}

/** Attachments the service holds, finished or not. */
export function attachmentCount(dbPath: string): number {
  return withDb(dbPath, (db) => (db.prepare('SELECT count(*) AS n FROM attachments').get() as { n: number }).n);
}
