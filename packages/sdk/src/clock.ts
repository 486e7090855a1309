/**
 * Server-corrected time. The service refuses a message whose ULID time is more than 5 minutes
 * from its own clock (clock_skew), so ULIDs are made with local time plus the offset observed
 * from each response's Date header. Date has one-second resolution: the estimate takes the middle
 * of that second and the middle of the round trip, good to about a second, far inside the window.
 */
export class ServerClock {
  private offsetMs = 0;
  private known = false;

  constructor(private readonly local: () => number = () => Date.now()) {}

  /** Corrected time, ms since the epoch. */
  now(): number {
    return this.local() + this.offsetMs;
  }

  /** Local clock reading, for timing a request. */
  localNow(): number {
    return this.local();
  }

  /** server − local, ms (0 until a response with a Date header arrived). */
  get offset(): number {
    return this.offsetMs;
  }

  get synced(): boolean {
    return this.known;
  }

  /** Feeds one response: `sentAt`/`receivedAt` are local clock readings around the request. */
  observe(dateHeader: string | null, sentAt: number, receivedAt: number): void {
    if (!dateHeader) return;
    const server = Date.parse(dateHeader);
    if (!Number.isFinite(server)) return;
    const estimate = server + 500 - (sentAt + receivedAt) / 2;
    // Ignore sub-second wobble from the header's rounding; follow real changes at once.
    if (!this.known || Math.abs(estimate - this.offsetMs) > 1500) this.offsetMs = Math.round(estimate);
    this.known = true;
  }
}
