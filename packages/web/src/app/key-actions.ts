/**
 * What the views do with the keys of the people this account talks to, as the Session offers it
 * (`session.keys`): each peer's trust state, which peers of a chat hold sending until a key change
 * is accepted, the key and digits of a safety number, "Mark as verified" and "Accept new key".
 * The trust store (trust.ts) keeps the pins; the Session emits "trust" when they change.
 */
import { safetyNumber, type Conversations, type Messenger } from '@svc/sdk';
import { splitChat } from './route.js';
import type { Trust, TrustStatus } from './trust.js';

export class KeyActions {
  constructor(
    private readonly trust: Trust,
    private readonly messenger: Messenger,
    private readonly conv: Conversations,
  ) {}

  /** Whether the peer is verified, whether their key changed, and whether an earlier key was verified. */
  status(peer: string): TrustStatus {
    return this.trust.status(peer);
  }

  /** The peers of `chat` whose changed key waits to be accepted: sending there is held until then. */
  heldPeers(chat: string): string[] {
    const { kind, id } = splitChat(chat);
    if (kind === 'dm') return this.trust.isHeld(id) ? [id] : [];
    return (this.messenger.room(id)?.members ?? []).filter((nick) => this.trust.isHeld(nick));
  }

  /**
   * The key whose safety number to show: a waiting new key first (that is what to compare), else
   * the pin; with nothing pinned yet, fetching the key for reading pins it (trust on first use).
   */
  async keyToCompare(peer: string): Promise<string> {
    const held = () => this.trust.changes.get(peer)?.seen ?? this.trust.pinned(peer);
    const now = held();
    if (now !== undefined) return now;
    const fetched = await this.messenger.peerKey(peer, 'receive');
    return held() ?? fetched;
  }

  /** The safety number of this account and `peer` holding `key`, as 60 digits. */
  safetyNumber(peer: string, key: string): Promise<string> {
    return safetyNumber(this.messenger.nick, this.messenger.publicKey, peer, key);
  }

  /** "Mark as verified": the digits made from `key` matched; refused unless `key` is the peer's pin. */
  verify(peer: string, key: string): Promise<void> {
    return this.trust.verify(peer, key);
  }

  /** "Mark as not verified". */
  unverify(peer: string): Promise<void> {
    return this.trust.unverify(peer);
  }

  /** "Accept new key": the peer's changed key is trusted, sends to them use it, and what waited for it goes now. */
  async accept(peer: string): Promise<void> {
    await this.trust.accept(peer);
    this.messenger.forgetPeer(peer);
    this.conv.online();
  }
}
