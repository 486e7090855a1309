/**
 * The addresses each nick signed in from lately. The per-nick login budget (routes/account.ts)
 * does not hold them, so a stranger who spends that budget with guesses from many addresses
 * does not lock the owner out of the places they sign in from.
 *
 * Memory is bounded whatever is remembered: at most KNOWN_PER_NICK addresses per nick (the newest
 * kept) and KNOWN_MAX_ENTRIES in all in one process (the nicks remembered longest ago go first).
 * An entry is added only by a successful sign-in or registration, so filling these bounds takes
 * accounts and their passwords, and what an eviction costs is the budget holding that owner again.
 */
import type { FastifyBaseLogger } from 'fastify';

/** How long a sign-in keeps its address known. */
export const KNOWN_FOR_MS = 30 * 24 * 3600 * 1000;
/** Addresses remembered per nick: more than one person signs in from in a month. */
export const KNOWN_PER_NICK = 32;
/** Entries held by one process. */
export const KNOWN_MAX_ENTRIES = 100_000;

export interface KnownAddresses {
  /** Records that `nick` signed in from `addr` (a limit address: IPv4, or an IPv6 /64) now. */
  remember(nick: string, addr: string): Promise<void>;
  /** Whether `nick` signed in from `addr` within KNOWN_FOR_MS. */
  has(nick: string, addr: string): Promise<boolean>;
  close(): Promise<void>;
}

export class MemoryKnownAddresses implements KnownAddresses {
  /** Nick → address → time of its last sign-in; both maps in the order of the last sign-in. */
  private readonly known = new Map<string, Map<string, number>>();
  private entries = 0;

  constructor(
    private readonly now: () => number = Date.now,
    private readonly maxEntries = KNOWN_MAX_ENTRIES,
  ) {}

  /** How many addresses are held in all (tests check the bound). */
  get size(): number {
    return this.entries;
  }

  async remember(nick: string, addr: string): Promise<void> {
    let addrs = this.known.get(nick);
    if (addrs) this.known.delete(nick);
    else addrs = new Map();
    this.known.set(nick, addrs);
    if (addrs.delete(addr)) this.entries--;
    addrs.set(addr, this.now());
    this.entries++;
    if (addrs.size > KNOWN_PER_NICK) this.drop(addrs, addrs.keys().next().value!);
    for (const [oldest, its] of this.known) {
      if (this.entries <= this.maxEntries) break;
      this.entries -= its.size;
      this.known.delete(oldest);
    }
  }

  async has(nick: string, addr: string): Promise<boolean> {
    const addrs = this.known.get(nick);
    const at = addrs?.get(addr);
    if (at === undefined) return false;
    if (at > this.now() - KNOWN_FOR_MS) return true;
    this.drop(addrs!, addr);
    if (addrs!.size === 0) this.known.delete(nick);
    return false;
  }

  private drop(addrs: Map<string, number>, addr: string): void {
    if (addrs.delete(addr)) this.entries--;
  }

  async close(): Promise<void> {}
}

/** The shared record (Redis) with this process's own beside it, used while Redis cannot answer. */
export class FallbackKnownAddresses implements KnownAddresses {
  constructor(
    private readonly shared: KnownAddresses,
    private readonly local: KnownAddresses,
    private readonly log: FastifyBaseLogger,
  ) {}

  async remember(nick: string, addr: string): Promise<void> {
    await this.local.remember(nick, addr);
    // The sign-in itself succeeded: a Redis outage must not turn it into an error.
    await this.shared
      .remember(nick, addr)
      .catch((err: Error) => this.log.warn({ err: { message: err.message } }, 'known addresses: Redis unreachable'));
  }

  async has(nick: string, addr: string): Promise<boolean> {
    if (await this.local.has(nick, addr)) return true;
    return this.shared.has(nick, addr).catch(() => false);
  }

  async close(): Promise<void> {
    await this.shared.close();
    await this.local.close();
  }
}
