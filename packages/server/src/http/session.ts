/** The session check of every non-public route: cookie → SHA-256 → stored session, not expired. */
import type { ServerResponse } from 'node:http';
import { ApiError, LIMITS, isDeviceId } from '@svc/protocol';
import { sessionId } from '../crypto.js';
import type { Caller, Deps } from '../domain/deps.js';
import { readSessionToken, sessionCookie } from './cookies.js';
import type { RememberedSessions } from './remembered-sessions.js';

/** Last-use times are written at most this often, so reads do not each cost a write. */
export const TOUCH_EVERY_MS = 10 * 60 * 1000;

/**
 * The session check. `remember`, when given, keeps the session it found (remembered-sessions.ts);
 * it is given on the routes whose store confirms the caller inside a send.
 *
 * `res`, when given, gets the session cookie again, with a fresh Max-Age, whenever the session's
 * last use is recorded: a session lives 30 days after its last use, and its cookie then does too,
 * instead of ending in the browser 30 days after login. Set on the raw response, so that it goes
 * out with whatever answers the request, an error or an event stream included, and the cleared
 * cookie of logout and account deletion takes its place.
 */
export async function authenticate(
  deps: Deps,
  cookieHeader: string | undefined,
  deviceHeader: string | string[] | undefined,
  remember?: RememberedSessions,
  res?: ServerResponse,
): Promise<Caller> {
  const token = readSessionToken(cookieHeader);
  if (!token) throw new ApiError('unauthenticated');
  const id = sessionId(token);
  const device = typeof deviceHeader === 'string' ? deviceHeader : undefined;
  // The device's owner is asked for in the same round as the session, so the store answers both
  // with one statement; the X-Device check itself (requireOwnDevice) still runs at its own step.
  const deviceOwner = device !== undefined && isDeviceId(device) ? deps.store.deviceOwner(device) : undefined;
  // A request refused here never awaits it: its failure must not become an unhandled rejection.
  deviceOwner?.catch(() => undefined);
  const s = await deps.store.getSession(id);
  const now = deps.now();
  if (!s) throw new ApiError('unauthenticated');
  if (s.lastUsedAt + LIMITS.sessionIdleMs <= now) {
    await deps.store.deleteSession(id);
    throw new ApiError('unauthenticated');
  }
  let lastUsedAt = s.lastUsedAt;
  if (now - s.lastUsedAt >= TOUCH_EVERY_MS) {
    await deps.store.touchSession(id, now);
    lastUsedAt = now;
    res?.setHeader('set-cookie', sessionCookie(token, deps.config.secureCookies));
  }
  remember?.remember(id, { nick: s.nick, lastUsedAt });
  const caller: Caller = { nick: s.nick, sessionId: id, device };
  if (deviceOwner) caller.deviceOwner = deviceOwner;
  return caller;
}

/**
 * A send's caller from a remembered session, without asking the store: `provisional`, so that
 * the send confirms the session and X-Device with its own reads, and anything refused before
 * that runs the full check first (routes/index.ts). Null when the session is not remembered.
 */
export function rememberedCaller(
  deps: Deps,
  remembered: RememberedSessions,
  cookieHeader: string | undefined,
  deviceHeader: string | string[] | undefined,
): Caller | null {
  const token = readSessionToken(cookieHeader);
  if (!token) return null;
  const id = sessionId(token);
  const s = remembered.get(id, deps.now());
  if (s === null) return null;
  return { nick: s.nick, sessionId: id, device: typeof deviceHeader === 'string' ? deviceHeader : undefined, provisional: true };
}
