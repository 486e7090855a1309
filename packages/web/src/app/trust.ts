/**
 * Trust on first use (decisions §12): the first public key seen for a peer is pinned; a different
 * key later is a key change, which the app shows as a warning and which holds sending to that
 * peer (and wrapping room keys for them) until the user accepts it. Reading stays possible: a
 * message under the new key is authentic for whoever holds it, and the warning says so.
 * Pins are kept sealed at rest like the history, so they cannot be swapped unnoticed.
 */
import { SdkError, openAtRest, sealAtRest, type KeyCheck, type Sealed } from '@svc/sdk';
import { Db, STORES } from './idb.js';

interface PinRow {
  nick: string;
  sealed: Sealed;
}

interface Pin {
  publicKey: string;
  pinnedAt: number;
}

export interface KeyChange {
  nick: string;
  pinned: string;
  seen: string;
}

const ctx = (nick: string) => `pin|${nick}`;

export class Trust {
  private pins = new Map<string, Pin>();
  /** Peers whose current key differs from the pinned one, waiting for the user's decision. */
  readonly changes = new Map<string, KeyChange>();
  onChange: () => void = () => undefined;

  constructor(
    private readonly db: Db,
    private readonly key: CryptoKey,
    private readonly self: { nick: string; publicKey: string },
  ) {}

  async load(): Promise<void> {
    for (const row of await this.db.all<PinRow>(STORES.pins)) {
      try {
        this.pins.set(row.nick, (await openAtRest(this.key, row.sealed, ctx(row.nick))) as Pin);
      } catch {
        // A pin that does not open is treated as absent; the key is pinned again on next use.
      }
    }
  }

  pinned(nick: string): string | undefined {
    return this.pins.get(nick)?.publicKey;
  }

  private async pin(nick: string, publicKey: string): Promise<void> {
    const pin: Pin = { publicKey, pinnedAt: Date.now() };
    this.pins.set(nick, pin);
    await this.db.put(STORES.pins, { nick, sealed: await sealAtRest(this.key, pin, ctx(nick)) } satisfies PinRow);
  }

  /** Sees a peer's key (from the SDK, the contact list or a room): pins it, or records a change. */
  async observe(nick: string, publicKey: string): Promise<'ok' | 'changed'> {
    if (nick === this.self.nick) return publicKey === this.self.publicKey ? 'ok' : 'changed';
    const pinned = this.pins.get(nick)?.publicKey;
    if (pinned === undefined) {
      await this.pin(nick, publicKey);
      return 'ok';
    }
    if (pinned === publicKey) {
      if (this.changes.delete(nick)) this.onChange();
      return 'ok';
    }
    const known = this.changes.get(nick);
    if (!known || known.seen !== publicKey) {
      this.changes.set(nick, { nick, pinned, seen: publicKey });
      this.onChange();
    }
    return 'changed';
  }

  /** The user compared the new key (safety number) and accepts it: it becomes the pin. */
  async accept(nick: string): Promise<void> {
    const c = this.changes.get(nick);
    if (!c) return;
    await this.pin(nick, c.seen);
    this.changes.delete(nick);
    this.onChange();
  }

  isHeld(nick: string): boolean {
    return this.changes.has(nick);
  }

  /** The SDK hook: a changed key refuses `send` (held) and lets `receive` through (warned). */
  readonly keyCheck: KeyCheck = async (nick, publicKey, purpose) => {
    const r = await this.observe(nick, publicKey);
    if (r === 'changed' && purpose === 'send') {
      throw new SdkError('untrusted_key', { message: `The key of ${nick} changed. Compare safety numbers and accept the new key before sending.` });
    }
  };
}
