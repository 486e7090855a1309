/**
 * The account's message budget as this client sees it: the service allows `limit` messages per
 * nick in any sliding minute (30 by default) and answers 429 with Retry-After past that. The pacer
 * keeps the times of this client's accepted sends, so it never asks for more than the budget, and
 * learns from a 429 (another device of the account, or a lower limit) to wait as long as told.
 *
 * The budget is shared by priority: the person's own messages may use all of it; receipts and
 * history transfer only use what is left above a reserve, and only while no message of the
 * person's waits, so typing fast never waits behind them.
 */
import type { Priority } from './model.js';

export const DEFAULT_MESSAGE_LIMIT = 30;
export const WINDOW_MS = 60_000;
/** Sends are recorded when they leave and counted by the service when they arrive: keep a margin. */
const MARGIN_MS = 1_000;

export class Pacer {
  private sent: number[] = [];
  private blockedUntil = 0;

  constructor(
    private limit = DEFAULT_MESSAGE_LIMIT,
    private readonly now: () => number = Date.now,
    /** Slots kept free of receipts and bulk sends for the person's own messages; a third of the limit by default. */
    private readonly reserveSlots?: number,
  ) {}

  private get reserve(): number {
    return this.reserveSlots ?? Math.ceil(this.limit / 3);
  }

  private prune(): void {
    const cut = this.now() - WINDOW_MS - MARGIN_MS;
    while (this.sent.length > 0 && this.sent[0]! <= cut) this.sent.shift();
  }

  private capacity(priority: Priority): number {
    return priority === 'user' ? this.limit : Math.max(1, this.limit - this.reserve);
  }

  /** Milliseconds until a message of `priority` may go (0: now). `ahead` more of it wait before it. */
  waitMs(priority: Priority, ahead = 0): number {
    this.prune();
    const now = this.now();
    const blocked = Math.max(0, this.blockedUntil - now);
    const cap = this.capacity(priority);
    // The (ahead+1)-th free slot: when enough of the recorded sends have left the window.
    const needFree = this.sent.length + ahead + 1 - cap;
    if (needFree <= 0) return blocked;
    if (needFree > this.sent.length) {
      // Further out than the recorded sends reach: whole windows more.
      const rounds = Math.ceil(needFree / cap);
      return Math.max(blocked, (this.sent[0] ?? now) + rounds * (WINDOW_MS + MARGIN_MS) - now);
    }
    return Math.max(blocked, this.sent[needFree - 1]! + WINDOW_MS + MARGIN_MS - now);
  }

  /** A send is leaving now. */
  note(): void {
    this.prune();
    this.sent.push(this.now());
  }

  /** The service refused the last send with 429: it did not count, and nothing goes for `retryAfter` s. */
  refused(retryAfterS: number): void {
    this.sent.pop();
    this.blockedUntil = Math.max(this.blockedUntil, this.now() + Math.max(1, retryAfterS) * 1000);
  }

  /** The last send failed before the service counted it (network). */
  unnote(): void {
    this.sent.pop();
  }

  /** The service's limit, when the app learns it (a benchmark or an operator's lower limit). */
  setLimit(limit: number): void {
    this.limit = Math.max(1, limit);
  }

  get used(): number {
    this.prune();
    return this.sent.length;
  }

  /** What the pacer knows, as plain data, for a program that runs once per message and keeps it between runs. */
  snapshot(): PacerSnapshot {
    this.prune();
    return { sent: [...this.sent], blockedUntil: this.blockedUntil };
  }

  /** Takes back what snapshot() gave (another run's sends count against the same budget); times out of the window drop. */
  restore(s: PacerSnapshot): void {
    const times = s.sent.filter((t) => Number.isFinite(t)).sort((a, b) => a - b);
    this.sent = [...this.sent, ...times].sort((a, b) => a - b);
    this.blockedUntil = Math.max(this.blockedUntil, Number.isFinite(s.blockedUntil) ? s.blockedUntil : 0);
    this.prune();
  }
}

export interface PacerSnapshot {
  /** Times (ms) of the sends still inside the window. */
  sent: number[];
  /** Nothing goes before this time (ms), after a 429. */
  blockedUntil: number;
}
