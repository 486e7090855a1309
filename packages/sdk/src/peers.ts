/**
 * Peers as one signed-in account sees them: each peer's public key (fetched once per session from
 * GET /api/users/{nick}), passed through the app's `keyCheck` hook before first use per purpose,
 * and the pair keys made with it. The app pins keys in that hook (trust on first use) and may hold
 * sending on a changed key while still letting messages be read.
 */
import type { ApiClient } from './api.js';
import type { Identity } from './crypto/identity.js';
import { pairKey } from './crypto/pair.js';
import { safetyNumber } from './crypto/safety.js';
import { SdkError } from './errors.js';

/** Why a peer key is about to be used: the app may accept a changed key for reading but hold sending. */
export type KeyPurpose = 'send' | 'receive';

/**
 * Called before a peer's public key is first used in this session (per purpose). Return to accept;
 * throw (or return a promise that waits for the user's consent) to refuse or hold.
 */
export type KeyCheck = (nick: string, publicKey: string, purpose: KeyPurpose) => void | Promise<void>;

export class Peers {
  private keys = new Map<string, Promise<string>>();
  private checked = new Map<string, string>();
  private pairs = new Map<string, Promise<CryptoKey>>();

  constructor(
    private readonly api: ApiClient,
    private readonly keyCheck: KeyCheck | undefined,
    private readonly me: { nick: string; identity: Identity },
  ) {
    // One's own key needs no check: it comes from the sealed blob this password opened.
    this.keys.set(me.nick, Promise.resolve(me.identity.publicKey));
    this.checked.set(`${me.nick}|send`, me.identity.publicKey);
    this.checked.set(`${me.nick}|receive`, me.identity.publicKey);
  }

  /** A peer's public key, fetched once per session and passed through keyCheck for `purpose`. */
  async key(nick: string, purpose: KeyPurpose = 'send'): Promise<string> {
    let p = this.keys.get(nick);
    if (!p) {
      p = this.api.user(nick).then((u) => u.publicKey);
      this.keys.set(nick, p);
      p.catch(() => this.keys.delete(nick));
    }
    const publicKey = await p;
    await this.check(nick, publicKey, purpose);
    return publicKey;
  }

  /**
   * Passes `publicKey` of `nick` through keyCheck for `purpose` (once per session while accepted).
   * Not necessarily the key the service shows now: a room key is checked against the key it was
   * unwrapped with.
   */
  async check(nick: string, publicKey: string, purpose: KeyPurpose): Promise<void> {
    const tag = `${nick}|${purpose}`;
    if (this.checked.get(tag) === publicKey) return;
    if (this.keyCheck) {
      try {
        await this.keyCheck(nick, publicKey, purpose);
      } catch (cause) {
        throw cause instanceof SdkError ? cause : new SdkError('untrusted_key', { cause });
      }
    }
    this.checked.set(tag, publicKey);
  }

  /** Forgets what is cached about a peer (after the user accepted a changed key, or to re-check it). */
  forget(nick: string): void {
    if (nick === this.me.nick) return;
    this.keys.delete(nick);
    this.checked.delete(`${nick}|send`);
    this.checked.delete(`${nick}|receive`);
    for (const k of [...this.pairs.keys()]) if (k.startsWith(`${nick}|`)) this.pairs.delete(k);
  }

  async pair(peer: string, purpose: KeyPurpose): Promise<CryptoKey> {
    return (await this.pairAndKey(peer, purpose)).pair;
  }

  /** The pair key with a peer and the peer public key it was made with. */
  async pairAndKey(peer: string, purpose: KeyPurpose): Promise<{ pair: CryptoKey; publicKey: string }> {
    const publicKey = await this.key(peer, purpose);
    const tag = `${peer}|${publicKey}`;
    let k = this.pairs.get(tag);
    if (!k) {
      k = pairKey(this.me.identity.privateKey, this.me.nick, peer, publicKey);
      this.pairs.set(tag, k);
      k.catch(() => this.pairs.delete(tag));
    }
    return { pair: await k, publicKey };
  }

  /** The safety number with a peer, to compare out of band. */
  async safetyNumber(peer: string): Promise<string> {
    return safetyNumber(this.me.nick, this.me.identity.publicKey, peer, await this.key(peer, 'receive'));
  }
}
