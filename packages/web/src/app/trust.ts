/**
 * Trust on first use (docs/CRYPTO.md): the first public key seen for a peer is pinned; a different
 * key later is a key change, which the app shows as a warning and which holds sending to that
 * peer (and wrapping room keys for them) until the user accepts it. Reading stays possible: a
 * message under the new key is authentic for whoever holds it, and the warning says so.
 * Pins are kept sealed at rest like the history, so they cannot be swapped unnoticed, each row
 * named by a tag of the nick (tags.ts), so the stored pins do not say whom this account knows.
 *
 * "Verified" (the user compared safety numbers) belongs to the pinned key and lives in the same
 * sealed row: it can only be set on the key that is pinned, and a key change clears it when the
 * new key is accepted, leaving `wasVerified` so the app can say the contact was verified before.
 * While the change waits for the user, the old pin (and its mark) stays, and the contact counts
 * as changed, not verified.
 */
import { SdkError, openAtRest, sealAtRest, type KeyCheck, type Sealed } from '@svc/sdk';
import type { ChatSummary } from './chats.js';
import { STORES, type Db, type Row } from './idb.js';
import { splitChat } from './route.js';
import type { Tags } from './tags.js';

/** `k`: the tag of the nick; the pin, nick included, is sealed. */
export interface PinRow extends Row {
  sealed: Sealed;
}

export interface Pin {
  publicKey: string;
  pinnedAt: number;
  /** When the user marked this key as verified; absent when it is not. */
  verifiedAt?: number;
  /** An earlier key of this contact was verified, and a key change replaced it. */
  wasVerified?: boolean;
}

/** What the app shows about a contact's key. */
export interface TrustStatus {
  /** The pinned key is marked verified and no change is waiting. */
  verified: boolean;
  /** A different key was seen and waits for the user to accept it. */
  changed: boolean;
  /** The contact was verified under an earlier key (the pinned one, if a change waits). */
  wasVerified: boolean;
}

export interface KeyChange {
  nick: string;
  pinned: string;
  seen: string;
}

const ctx = (k: string) => `pin|${k}`;

/** The row a pin is stored as (also for moving an old database, migrate.ts). */
export async function pinRow(key: CryptoKey, tags: Tags, nick: string, pin: Pin): Promise<PinRow> {
  const rowKey = await tags.pin(nick);
  return { k: rowKey, sealed: await sealAtRest(key, { ...pin, nick }, ctx(rowKey)) };
}

export class Trust {
  private pins = new Map<string, Pin>();
  /** Peers whose current key differs from the pinned one, waiting for the user's decision. */
  readonly changes = new Map<string, KeyChange>();
  onChange: () => void = () => undefined;

  constructor(
    private readonly db: Db,
    private readonly key: CryptoKey,
    private readonly tags: Tags,
    private readonly self: { nick: string; publicKey: string },
  ) {}

  async load(): Promise<void> {
    // Opened all at once (the start waits for them), kept in the stored order.
    const rows = await this.db.all<PinRow>(STORES.pins);
    const opened = await Promise.all(
      rows.map((row) =>
        openAtRest(this.key, row.sealed, ctx(row.k)).then(
          (value) => value as Pin & { nick: string },
          // A pin that does not open is treated as absent; the key is pinned again on next use.
          () => undefined,
        ),
      ),
    );
    for (const value of opened) {
      if (typeof value !== 'object' || value === null) continue;
      const { nick, ...pin } = value;
      if (typeof nick === 'string') this.pins.set(nick, pin);
    }
  }

  pinned(nick: string): string | undefined {
    return this.pins.get(nick)?.publicKey;
  }

  status(nick: string): TrustStatus {
    const pin = this.pins.get(nick);
    const changed = this.changes.has(nick);
    const marked = pin?.verifiedAt !== undefined;
    return { verified: marked && !changed, changed, wasVerified: (changed && marked) || pin?.wasVerified === true };
  }

  /** Adds each DM entry's trust state to the chat list (rooms are left as they are). */
  annotate(list: ChatSummary[]): ChatSummary[] {
    return list.map((entry) => {
      if (entry.kind !== 'dm') return entry;
      const st = this.status(splitChat(entry.chat).id);
      return { ...entry, verified: st.verified, keyChanged: st.changed };
    });
  }

  /**
   * The user compared the safety number made from `publicKey` and it matched. Only the pinned key
   * can be marked: a number computed from another key (the pin changed meanwhile, or a change
   * waits) is refused and nothing is stored.
   */
  async verify(nick: string, publicKey: string): Promise<void> {
    const pin = this.pins.get(nick);
    if (this.changes.has(nick)) throw new Error(`The key of ${nick} changed. Accept the new key first, then compare the new safety number.`);
    if (!pin || pin.publicKey !== publicKey)
      throw new Error(`This safety number is not for the key of ${nick} this device knows. Open it again and compare once more.`);
    await this.store(nick, { ...pin, verifiedAt: Date.now() });
    this.onChange();
  }

  /** Takes the "verified" mark off the pinned key. */
  async unverify(nick: string): Promise<void> {
    const pin = this.pins.get(nick);
    if (!pin || pin.verifiedAt === undefined) return;
    const next = { ...pin };
    delete next.verifiedAt;
    await this.store(nick, next);
    this.onChange();
  }

  private async pin(nick: string, publicKey: string, wasVerified = false): Promise<void> {
    await this.store(nick, wasVerified ? { publicKey, pinnedAt: Date.now(), wasVerified } : { publicKey, pinnedAt: Date.now() });
  }

  private async store(nick: string, pin: Pin): Promise<void> {
    this.pins.set(nick, pin);
    await this.db.put(STORES.pins, await pinRow(this.key, this.tags, nick, pin));
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

  /**
   * The user accepts the new key: it becomes the pin, not verified (it was never compared), and
   * remembers whether the contact was verified before.
   */
  async accept(nick: string): Promise<void> {
    const change = this.changes.get(nick);
    if (!change) return;
    const old = this.pins.get(nick);
    await this.pin(nick, change.seen, old?.verifiedAt !== undefined || old?.wasVerified === true);
    this.changes.delete(nick);
    this.onChange();
  }

  isHeld(nick: string): boolean {
    return this.changes.has(nick);
  }

  /** The SDK hook: a changed key refuses `send` (held) and lets `receive` through (warned). */
  readonly keyCheck: KeyCheck = async (nick, publicKey, purpose) => {
    const seen = await this.observe(nick, publicKey);
    if (seen === 'changed' && purpose === 'send') {
      throw new SdkError('untrusted_key', { message: `The key of ${nick} changed. Compare safety numbers and accept the new key before sending.` });
    }
  };
}
