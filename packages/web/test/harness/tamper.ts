/**
 * Changes the running server's SQLite file from outside, behind the clients' backs: what a
 * hostile service, or anyone holding its database, can do to the open metadata it keeps.
 */
import Database from 'better-sqlite3';

/** Lists `nick` as a member of room `roomId` without any client asking for it. */
export function addMemberBehindClients(dbPath: string, roomId: string, nick: string): void {
  const db = new Database(dbPath, { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    db.prepare('INSERT INTO room_members (room_id, nick) VALUES (?, ?)').run(roomId, nick);
  } finally {
    db.close();
  }
}
