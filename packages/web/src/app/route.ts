/**
 * Hash routes, so every screen has an address that survives a reload and a notification can
 * open a chat: `#/` (chat list), `#/chat/dm:<nick>`, `#/chat/room:<id>`, `#/settings`.
 */

export type Route = { name: 'home' } | { name: 'chat'; chat: string } | { name: 'settings' };

const CHAT_RE = /^(room:[A-Za-z0-9_-]{1,64}|dm:[a-z0-9_]{2,32})$/;

export function isChatId(text: string): boolean {
  return CHAT_RE.test(text);
}

/** The decoded text, or null for a malformed escape such as a lone `%`. */
function decoded(text: string): string | null {
  try {
    return decodeURIComponent(text);
  } catch {
    return null;
  }
}

/** Any hash, from a link anyone may send, names a route: what does not decode goes home. */
export function parseRoute(hash: string): Route {
  const path = decoded(hash.replace(/^#/, ''));
  if (path === null) return { name: 'home' };
  if (path === '/settings') return { name: 'settings' };
  const match = /^\/chat\/(.+)$/.exec(path);
  if (match && match[1] && isChatId(match[1])) return { name: 'chat', chat: match[1] };
  return { name: 'home' };
}

export function routeHash(route: Route): string {
  if (route.name === 'chat') return `#/chat/${route.chat}`;
  if (route.name === 'settings') return '#/settings';
  return '#/';
}

export function go(route: Route): void {
  const hash = routeHash(route);
  if (location.hash !== hash) location.hash = hash;
}

export function dmChat(nick: string): string {
  return `dm:${nick}`;
}

export function roomChat(id: string): string {
  return `room:${id}`;
}

export function splitChat(chat: string): { kind: 'dm' | 'room'; id: string } {
  const colon = chat.indexOf(':');
  return { kind: chat.slice(0, colon) === 'room' ? 'room' : 'dm', id: chat.slice(colon + 1) };
}
