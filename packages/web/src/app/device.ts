/**
 * This browser's device id, one per account, kept in localStorage so a reload (or a later
 * sign-in of the same account in this browser) reuses the same device and its queue.
 * The id is random (16 bytes, b64url: 22 characters of A-Z a-z 0-9 _ -), never derived from the
 * nick, so it tells the service nothing.
 */

const KEY_PREFIX = 'svc.device.';

function randomId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

export function deviceIdFor(nick: string): string {
  const key = KEY_PREFIX + nick;
  let id = localStorage.getItem(key);
  if (!id || !/^[A-Za-z0-9_-]{8,64}$/.test(id)) {
    id = randomId();
    localStorage.setItem(key, id);
  }
  return id;
}

/** Forget the id (after this device was removed, or the account deleted): the next sign-in makes a new one. */
export function forgetDeviceId(nick: string): void {
  localStorage.removeItem(KEY_PREFIX + nick);
}

const CURRENT = 'svc.account';

/** The account signed in on this browser, so a reload reopens it without asking for the password. */
export function currentAccount(): string | null {
  return localStorage.getItem(CURRENT);
}

export function setCurrentAccount(nick: string | null): void {
  if (nick) localStorage.setItem(CURRENT, nick);
  else localStorage.removeItem(CURRENT);
}

const KDF_PREFIX = 'svc.kdf.';

/**
 * The strongest key-derivation work (m, t) this browser has seen for an account, so a later
 * sign-in refuses weaker parameters a hostile service might serve (they are public, like the
 * nick kept here already). Null: never seen on this device.
 */
export function seenKdf(nick: string): { m: number; t: number } | null {
  try {
    const v = JSON.parse(localStorage.getItem(KDF_PREFIX + nick) ?? 'null') as { m?: unknown; t?: unknown } | null;
    return v && typeof v.m === 'number' && typeof v.t === 'number' ? { m: v.m, t: v.t } : null;
  } catch {
    return null;
  }
}

export function rememberKdf(nick: string, kdf: { m: number; t: number }): void {
  const seen = seenKdf(nick);
  localStorage.setItem(KDF_PREFIX + nick, JSON.stringify({ m: Math.max(kdf.m, seen?.m ?? 0), t: Math.max(kdf.t, seen?.t ?? 0) }));
}
