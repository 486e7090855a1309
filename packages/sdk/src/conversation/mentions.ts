/**
 * `@nick` mentions in a message's text (or a file's caption). Nicks are lower case letters, digits
 * and `_` (2 to 32), and the service compares them exactly; since no nick holds a capital, a typed
 * `@Bob` means `bob`. A mention starts at the beginning of the text or after a character that cannot
 * be part of a nick or an address (so `ann@bob` is no mention), and ends where the nick ends: the
 * next character is not a letter, digit or `_` (`@bob.` and `@bob,` mention bob, `@bobby` does not).
 * Only the chat's members can be mentioned.
 */
import type { ChatMessage } from './model.js';

const MENTION = /(?<![\p{L}\p{N}_@])@([A-Za-z0-9_]{2,32})(?![\p{L}\p{N}_])/gu;

/** The members `body` mentions, each once, in the order they first appear. */
export function parseMentions(body: string, members: readonly string[]): string[] {
  const found: string[] = [];
  for (const match of body.matchAll(MENTION)) {
    const nick = match[1]!.toLowerCase();
    if (members.includes(nick) && !found.includes(nick)) found.push(nick);
  }
  return found;
}

/** Whether `m` (a message of another) mentions `self`. */
export function mentionsMe(m: Pick<ChatMessage, 'body' | 'from' | 'deleted' | 'expired'>, self: string): boolean {
  return m.from !== self && !m.deleted && !m.expired && m.body !== undefined && parseMentions(m.body, [self]).length > 0;
}

/**
 * The "@…" being typed just before `caret` in the composer's `text`: where the `@` is and the
 * letters after it (the listbox "Mention" filters by them), or null when the caret is not in one.
 */
export function mentionQuery(text: string, caret = text.length): { start: number; query: string } | null {
  const m = /(?<![\p{L}\p{N}_@])@([A-Za-z0-9_]{0,32})$/u.exec(text.slice(0, caret));
  return m ? { start: m.index, query: m[1]!.toLowerCase() } : null;
}

/** The members whose nick starts with `query` (case folded), alphabetically, without `self`. */
export function mentionCandidates(query: string, members: readonly string[], self?: string, limit = 50): string[] {
  const q = query.toLowerCase();
  return members
    .filter((n) => n !== self && n.startsWith(q))
    .sort()
    .slice(0, limit);
}

/** The composer's text with the "@…" at `start` (up to `caret`) replaced by `@nick ` and where the caret goes. */
export function insertMention(text: string, start: number, caret: number, nick: string): { text: string; caret: number } {
  const add = `@${nick} `;
  const rest = text.slice(caret).replace(/^ /, '');
  return { text: text.slice(0, start) + add + rest, caret: start + add.length };
}
