/**
 * Changes the running server's SQLite file from outside, behind the clients' backs: what a
 * hostile service, or anyone holding its database, can do to the open metadata it keeps.
 */
import { writeBehindService } from '@svc/testkit/harness';

/** Lists `nick` as a member of room `roomId` without any client asking for it. */
export function addMemberBehindClients(dbPath: string, roomId: string, nick: string): Promise<void> {
  return writeBehindService(dbPath, 'INSERT INTO room_members (room_id, nick) VALUES (?, ?)', [roomId, nick]);
}

/** Stops listing `nick` as a member of room `roomId` (its wrapped keys stay), without any client asking. */
export function hideMemberBehindClients(dbPath: string, roomId: string, nick: string): Promise<void> {
  return writeBehindService(dbPath, 'DELETE FROM room_members WHERE room_id = ? AND nick = ?', [roomId, nick]);
}

/** Drops every stored attachment, as the service does once their time to live is over. */
export async function dropAttachmentsBehindClients(dbPath: string): Promise<void> {
  await writeBehindService(dbPath, 'DELETE FROM attachment_parts', []);
  await writeBehindService(dbPath, 'DELETE FROM attachments', []);
}
