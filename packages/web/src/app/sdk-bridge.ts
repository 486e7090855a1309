/**
 * What the app needs from the SDK's Messenger that its public surface does not offer yet:
 * keeping a signed-in account across page reloads without asking for the password again.
 *
 * The identity private key is a non-extractable CryptoKey; IndexedDB stores such keys as they are
 * (structured clone), so the app saves {nick, publicKey, privateKey, kdf} while signed in and
 * resumes the Messenger from it. These two functions reach into Messenger internals (`me`,
 * `start`); they belong in the SDK as Messenger.exportSession() / Messenger.resume() and should
 * move there, after which this file goes away.
 */
import type { Kdf, Messenger } from '@svc/sdk';

export interface SavedIdentity {
  nick: string;
  publicKey: string;
  privateKey: CryptoKey;
  kdf: Kdf;
}

interface MessengerInternals {
  me: { nick: string; identity: { publicKey: string; privateKey: CryptoKey }; kdf: Kdf } | null;
  start(nick: string, identity: { publicKey: string; privateKey: CryptoKey }, kdf: Kdf): Promise<void>;
}

export function exportIdentity(m: Messenger): SavedIdentity {
  const me = (m as unknown as MessengerInternals).me;
  if (!me) throw new Error('not signed in');
  return { nick: me.nick, publicKey: me.identity.publicKey, privateKey: me.identity.privateKey, kdf: me.kdf };
}

export async function resumeMessenger(m: Messenger, saved: SavedIdentity): Promise<void> {
  await (m as unknown as MessengerInternals).start(saved.nick, { publicKey: saved.publicKey, privateKey: saved.privateKey }, saved.kdf);
}
