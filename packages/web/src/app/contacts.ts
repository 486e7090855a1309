/** Starting a DM: the nick must be an account other than one's own; its key is pinned on first sight. */
import { isNick } from '@svc/protocol';
import { refreshContacts } from './sync.js';
import type { Session } from './session.js';

export async function addContact(session: Session, input: string): Promise<string> {
  const nick = input.trim().replace(/^@/, '').toLowerCase();
  if (!isNick(nick)) throw new Error('A nick is 2 to 32 characters: lowercase letters a–z, digits and _.');
  if (nick === session.nick) throw new Error('That is your own nick. Start a chat with someone else.');
  const peer = await session.messenger.api.addContact(nick);
  await session.contactAdded(peer);
  void refreshContacts(session).catch(() => undefined);
  return `dm:${peer.nick}`;
}
