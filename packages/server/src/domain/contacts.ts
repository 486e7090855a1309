/** Contacts: the caller's chat-list rows for other accounts. */
import { ApiError, type Contact } from '@svc/protocol';
import type { Caller, Deps } from './deps.js';

export function listContacts(deps: Deps, caller: Caller): Promise<Contact[]> {
  return deps.store.listContacts(caller.nick);
}

export async function addContact(deps: Deps, caller: Caller, nick: string) {
  if (nick === caller.nick) throw new ApiError('self');
  const r = await deps.store.addContact(caller.nick, nick, deps.now());
  if ('error' in r) throw new ApiError(r.error);
  return { created: r.status === 'created', contact: { nick, publicKey: r.publicKey } };
}

export function removeContact(deps: Deps, caller: Caller, nick: string): Promise<void> {
  return deps.store.deleteContact(caller.nick, nick);
}
