/**
 * Trust on first use over a small key-value storage, for programs without the web app's pin
 * store (a command-line client, a bot): the first public key seen for a peer is pinned; a
 * different key later is recorded as a change that refuses sending to that peer (SdkError
 * `untrusted_key`) and lets reading through, until accept() pins the new key after the person
 * compared safety numbers. KeyPins.keyCheck is the Messenger's keyCheck hook.
 */
import type { KeyCheck } from './peers.js';
import { SdkError } from './errors.js';

export interface Pin {
  publicKey: string;
  pinnedAt: number;
  /** A different key the service served since, waiting for the person's consent. */
  changedTo?: string;
}

/** Where pins live: one value per nick. */
export interface PinStorage {
  get(nick: string): Promise<Pin | undefined>;
  put(nick: string, pin: Pin): Promise<void>;
}

/** Pins kept as named values of a ConversationStore (getMeta/putMeta), one per nick. */
export function metaPins(store: { getMeta(key: string): Promise<unknown>; putMeta(key: string, value: unknown): Promise<void> }): PinStorage {
  const key = (nick: string) => `pin|${nick}`;
  return {
    get: async (nick) => {
      const v = (await store.getMeta(key(nick))) as Pin | undefined;
      return v && typeof v.publicKey === 'string' ? v : undefined;
    },
    put: (nick, pin) => store.putMeta(key(nick), pin),
  };
}

export class KeyPins {
  constructor(
    private readonly storage: PinStorage,
    private readonly self: { nick: string; publicKey: string },
    private readonly now: () => number = Date.now,
  ) {}

  /** What is known of a peer's key: the pinned one, and a changed one waiting for consent. */
  status(nick: string): Promise<Pin | undefined> {
    return this.storage.get(nick);
  }

  /** Sees a peer's key: pins the first, records a different one as a change. */
  async observe(nick: string, publicKey: string): Promise<'ok' | 'changed'> {
    if (nick === this.self.nick) return publicKey === this.self.publicKey ? 'ok' : 'changed';
    const pin = await this.storage.get(nick);
    if (!pin) {
      await this.storage.put(nick, { publicKey, pinnedAt: this.now() });
      return 'ok';
    }
    if (pin.publicKey === publicKey) {
      if (pin.changedTo !== undefined) await this.storage.put(nick, { publicKey, pinnedAt: pin.pinnedAt });
      return 'ok';
    }
    if (pin.changedTo !== publicKey) await this.storage.put(nick, { ...pin, changedTo: publicKey });
    return 'changed';
  }

  /**
   * The person compared the safety number of the changed key and accepts it: it becomes the pin.
   * Returns the key accepted, or null when no change waits.
   */
  async accept(nick: string): Promise<string | null> {
    const pin = await this.storage.get(nick);
    if (!pin?.changedTo) return null;
    await this.storage.put(nick, { publicKey: pin.changedTo, pinnedAt: this.now() });
    return pin.changedTo;
  }

  /** The Messenger's hook: a changed key refuses `send` and lets `receive` through. */
  readonly keyCheck: KeyCheck = async (nick, publicKey, purpose) => {
    const r = await this.observe(nick, publicKey);
    if (r === 'changed' && purpose === 'send')
      throw new SdkError('untrusted_key', {
        message: `The key of ${nick} changed since it was first seen. Compare safety numbers with ${nick}, then accept the new key before sending.`,
      });
  };
}
