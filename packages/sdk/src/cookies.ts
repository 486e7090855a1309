/**
 * A fetch that keeps the session cookie in memory, for Node (tests, benchmark, scripts) where
 * fetch has no cookie jar. Browsers keep the cookie themselves and should use plain fetch.
 * Runtime-neutral: only the fetch API.
 */
import { SESSION_COOKIE } from '@svc/protocol';

export type FetchLike = (input: string, init?: RequestInit) => Promise<Response>;

export interface CookieFetch extends FetchLike {
  /** The current `svc_session=…` pair, or null. */
  cookie(): string | null;
  clear(): void;
}

const COOKIE_RE = new RegExp(`(?:^|[,\\s])${SESSION_COOKIE}=([^;,]*)`);

/**
 * `initial`: a `svc_session=…` pair kept from an earlier run (a command-line client keeps it in its
 * state file), so a new process goes on with the same session.
 */
export function cookieFetch(baseFetch: FetchLike = (i, o) => globalThis.fetch(i, o), initial: string | null = null): CookieFetch {
  let jar: string | null = initial;
  const f = (async (input: string, init: RequestInit = {}) => {
    const headers = new Headers(init.headers);
    if (jar && !headers.has('cookie')) headers.set('cookie', jar);
    const res = await baseFetch(input, { ...init, headers });
    const set = res.headers.get('set-cookie');
    const m = set ? COOKIE_RE.exec(set) : null;
    if (m) {
      // An empty value (or Max-Age=0) is the service clearing the cookie at logout.
      const cleared = m[1] === '' || /max-age=0\b/i.test(set!);
      jar = cleared ? null : `${SESSION_COOKIE}=${m[1]}`;
    }
    return res;
  }) as CookieFetch;
  f.cookie = () => jar;
  f.clear = () => {
    jar = null;
  };
  return f;
}
