/**
 * How long each difference between a room's record and the service's list has lasted, so that a
 * warning does not flash for the moment an announcement travels behind the service's own event
 * (room-members.ts). A timer wakes the listener when a difference comes of age.
 */
export class WarnClock {
  /** `<kind> <room> <nick>` → when the difference was first seen. */
  private readonly firstSeen = new Map<string, number>();
  private readonly timers = new Map<string, ReturnType<typeof setTimeout>>();
  private stopped = false;

  constructor(
    private readonly afterMs: number,
    private readonly now: () => number,
    private readonly wake: (roomId: string) => void,
  ) {}

  /** Of `nicks` (the differences of one kind in a room now), those that have lasted afterMs. */
  aged(kind: string, roomId: string, nicks: string[]): string[] {
    const now = this.now();
    const prefix = `${kind} ${roomId} `;
    for (const key of [...this.firstSeen.keys()]) {
      if (key.startsWith(prefix) && !nicks.includes(key.slice(prefix.length))) this.firstSeen.delete(key);
    }
    const out: string[] = [];
    let wake = Infinity;
    for (const nick of nicks) {
      const key = prefix + nick;
      const first = this.firstSeen.get(key) ?? now;
      this.firstSeen.set(key, first);
      if (now - first >= this.afterMs) out.push(nick);
      else wake = Math.min(wake, first + this.afterMs);
    }
    if (wake < Infinity && !this.timers.has(roomId) && !this.stopped) {
      const t = setTimeout(() => {
        this.timers.delete(roomId);
        this.wake(roomId);
      }, wake - now);
      this.timers.set(roomId, t);
    }
    return out;
  }

  /** Stops the timers (sign-out). */
  stop(): void {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }
}
