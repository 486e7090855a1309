/**
 * Hash routes, so every screen has an address that survives a reload and a notification can
 * open a chat: `#/` (chat list), `#/chat/dm:<nick>`, `#/chat/room:<id>`, `#/settings`.
 */

export type Route = { name: 'home' } | { name: 'chat'; chat: string } | { name: 'settings' };

const CHAT_RE = /^(room:[A-Za-z0-9_-]{1,64}|dm:[a-z0-9_]{2,32})$/;

export function isChatId(s: string): boolean {
  return CHAT_RE.test(s);
}

/** The decoded text, or null for a malformed escape such as a lone `%`. */
function decoded(s: string): string | null {
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}

/** Any hash, from a link anyone may send, names a route: what does not decode goes home. */
export function parseRoute(hash: string): Route {
  const path = decoded(hash.replace(/^#/, ''));
  if (path === null) return { name: 'home' };
  if (path === '/settings') return { name: 'settings' };
  const m = /^\/chat\/(.+)$/.exec(path);
  if (m && m[1] && isChatId(m[1])) return { name: 'chat', chat: m[1] };
  return { name: 'home' };
}

export function routeHash(r: Route): string {
  if (r.name === 'chat') return `#/chat/${r.chat}`;
  if (r.name === 'settings') return '#/settings';
  return '#/';
}

export function go(r: Route): void {
  const hash = routeHash(r);
  if (location.hash !== hash) location.hash = hash;
}

export function dmChat(nick: string): string {
  return `dm:${nick}`;
}

export function roomChat(id: string): string {
  return `room:${id}`;
}

export function splitChat(chat: string): { kind: 'dm' | 'room'; id: string } {
  const i = chat.indexOf(':');
  return { kind: chat.slice(0, i) === 'room' ? 'room' : 'dm', id: chat.slice(i + 1) };
}
