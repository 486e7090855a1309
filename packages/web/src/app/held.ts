/** Whether sending to a chat waits for the person to accept a changed key; names the peers. */
import { splitChat } from './route.js';
import type { Session } from './session.js';

export function heldPeers(session: Session, chat: string): string[] {
  const { kind, id } = splitChat(chat);
  if (kind === 'dm') return session.trust.isHeld(id) ? [id] : [];
  const room = session.messenger.room(id);
  return (room?.members ?? []).filter((n) => session.trust.isHeld(n));
}
