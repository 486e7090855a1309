/** Starting a DM: the nick must be an account other than one's own; its key is pinned on first sight. */
import { isNick } from '@svc/protocol';
import { refreshContacts } from './sync.js';
import type { Session } from './session.js';

export async function addContact(s: Session, input: string): Promise<string> {
  const nick = input.trim().replace(/^@/, '').toLowerCase();
  if (!isNick(nick)) throw new Error('A nick is 2 to 32 characters: lowercase letters a–z, digits and _.');
  if (nick === s.nick) throw new Error('That is your own nick. Start a chat with someone else.');
  const peer = await s.m.api.addContact(nick);
  await s.contactAdded(peer);
  void refreshContacts(s).catch(() => undefined);
  return `dm:${peer.nick}`;
}
