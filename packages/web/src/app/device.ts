/**
 * What this browser keeps in localStorage, none of it naming an account in the clear:
 *
 * - `svc.device.<tag>`: this browser's device id for an account, so a reload (or a later sign-in
 *   of the same account here) reuses the same device and its queue. The tag is of the account's
 *   index key, known once signed in. The id is random (16 bytes, b64url: 22 characters of A-Z a-z
 *   0-9 _ -), never derived from the nick, so it tells the service nothing.
 * - `svc.account`: the database of the account signed in now (a name made of a tag, idb.ts), so a
 *   reload reopens it without the password; removed at sign-out.
 * - `svc.kdf.<hash>` and `svc.kdf-salt`: the KDF work seen per account (below).
 *
 * Versions before the tagged layout kept `svc.device.<nick>`, `svc.kdf.<nick>` and the nick in
 * `svc.account`; each is moved to its new name when the account next signs in here.
 */
import { atRestTag } from '@svc/sdk';

const DEVICE_PREFIX = 'svc.device.';
const ID = /^[A-Za-z0-9_-]{8,64}$/;

function b64url(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function randomId(): string {
  return b64url(crypto.getRandomValues(new Uint8Array(16)));
}

async function deviceEntry(indexKey: CryptoKey): Promise<string> {
  return DEVICE_PREFIX + (await atRestTag(indexKey, 'device'));
}

/** The account's device id on this browser (made once; an id kept under the nick is moved). */
export async function deviceIdFor(indexKey: CryptoKey, nick: string): Promise<string> {
  const key = await deviceEntry(indexKey);
  const legacy = DEVICE_PREFIX + nick;
  let id = localStorage.getItem(key);
  if (!id || !ID.test(id)) {
    const old = localStorage.getItem(legacy);
    id = old && ID.test(old) ? old : randomId();
    localStorage.setItem(key, id);
  }
  localStorage.removeItem(legacy);
  return id;
}

/** Forget the id (after this device was removed, or the account deleted): the next sign-in makes a new one. */
export async function forgetDeviceId(indexKey: CryptoKey, nick: string): Promise<void> {
  localStorage.removeItem(await deviceEntry(indexKey));
  localStorage.removeItem(DEVICE_PREFIX + nick);
}

const CURRENT = 'svc.account';

/** The database of the account signed in on this browser, or (before the tagged layout) its nick. */
export function currentAccount(): string | null {
  return localStorage.getItem(CURRENT);
}

export function setCurrentAccount(dbName: string | null): void {
  if (dbName) localStorage.setItem(CURRENT, dbName);
  else localStorage.removeItem(CURRENT);
}

const KDF_PREFIX = 'svc.kdf.';
const KDF_SALT = 'svc.kdf-salt';

/**
 * The KDF memory is read before sign-in, when no key of the account exists, so its name cannot be
 * a tag of one. It is a salted hash of the nick instead, with a random salt of this browser: the
 * stored names list no nicks, though whoever reads localStorage can still test a nick they guess.
 */
async function kdfEntry(nick: string): Promise<string> {
  let salt = localStorage.getItem(KDF_SALT);
  if (!salt || !ID.test(salt)) {
    salt = randomId();
    localStorage.setItem(KDF_SALT, salt);
  }
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(`svc/kdf-memory/v1|${salt}|${nick}`));
  return KDF_PREFIX + b64url(new Uint8Array(digest).subarray(0, 16));
}

function readKdf(key: string): { m: number; t: number } | null {
  try {
    const saved = JSON.parse(localStorage.getItem(key) ?? 'null') as { m?: unknown; t?: unknown } | null;
    return saved && typeof saved.m === 'number' && typeof saved.t === 'number' ? { m: saved.m, t: saved.t } : null;
  } catch {
    return null;
  }
}

/**
 * The strongest key-derivation work (m, t) this browser has seen for an account, so a later
 * sign-in refuses weaker parameters a hostile service might serve. Null: never seen on this device.
 */
export async function seenKdf(nick: string): Promise<{ m: number; t: number } | null> {
  const seen = [readKdf(await kdfEntry(nick)), readKdf(KDF_PREFIX + nick)].filter((v) => v !== null);
  return seen.length === 0 ? null : { m: Math.max(...seen.map((v) => v.m)), t: Math.max(...seen.map((v) => v.t)) };
}

export async function rememberKdf(nick: string, kdf: { m: number; t: number }): Promise<void> {
  const seen = await seenKdf(nick);
  localStorage.setItem(await kdfEntry(nick), JSON.stringify({ m: Math.max(kdf.m, seen?.m ?? 0), t: Math.max(kdf.t, seen?.t ?? 0) }));
  localStorage.removeItem(KDF_PREFIX + nick);
}
