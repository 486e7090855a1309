/**
 * Sessions this instance has checked lately, for sends and attachment parts only, on a store that
 * confirms the caller inside the write (Store.confirmsCallerInSend: PostgreSQL). A send whose
 * session is remembered skips the per-request lookup: its session and X-Device are read again by
 * the send's own statements, in the round trip of its facts, and its checks refuse it there (401,
 * then 403) before anything is decided or written; a part's write confirms its session the same
 * way before it writes (401). So nothing here is ever trusted on its own, and nothing
 * needs invalidating: a session revoked or a device deleted on any instance, also while Redis is
 * down, is refused by the next send's own read (docs/DESIGN.md).
 *
 * A remembered session is used only while its last use is recent enough that the session check
 * would neither touch it (TOUCH_EVERY_MS) nor find it idle past its lifetime; otherwise the send
 * takes the full check, which touches it and remembers it again.
 */

/** Most sessions remembered; past it the map starts again (a bound on memory, not a policy). */
const MAX_REMEMBERED = 10_000;

export interface RememberedSession {
  nick: string;
  /** The session's last use as the check that remembered it saw (or wrote) it. */
  lastUsedAt: number;
}

export class RememberedSessions {
  private readonly map = new Map<string, RememberedSession>();

  /** `withinMs`: how long after its last use a session may be used without the full check. */
  constructor(private readonly withinMs: number) {}

  remember(sessionId: string, s: RememberedSession): void {
    if (this.map.size >= MAX_REMEMBERED && !this.map.has(sessionId)) this.map.clear();
    this.map.set(sessionId, s);
  }

  /** The remembered session, if its last use is recent enough at `now`. */
  get(sessionId: string, now: number): RememberedSession | null {
    const s = this.map.get(sessionId);
    if (s === undefined) return null;
    if (now - s.lastUsedAt >= this.withinMs || now < s.lastUsedAt) {
      this.map.delete(sessionId);
      return null;
    }
    return s;
  }

  forget(sessionId: string): void {
    this.map.delete(sessionId);
  }
}
