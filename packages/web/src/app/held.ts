/** Whether sending to a chat waits for the person to accept a changed key; names the peers. */
import { splitChat } from './route.js';
import type { Session } from './session.js';

export function heldPeers(s: Session, chat: string): string[] {
  const { kind, id } = splitChat(chat);
  if (kind === 'dm') return s.trust.isHeld(id) ? [id] : [];
  const room = s.m.room(id);
  return (room?.members ?? []).filter((n) => s.trust.isHeld(n));
}
