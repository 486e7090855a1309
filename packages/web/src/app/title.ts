/**
 * The tab title: "Messenger", or "(N) Messenger" while N messages wait unread across all chats,
 * so a background tab shows that something arrived. The sign-in screen has its own title.
 */
import type { ChatSummary } from './chats.js';
import type { Session } from './session.js';

export const APP_TITLE = 'Messenger';
export const SIGN_IN_TITLE = `Sign in · ${APP_TITLE}`;
/** The locked app's title: no count, nothing of any chat. */
export const LOCKED_TITLE = `Locked · ${APP_TITLE}`;

export function titleFor(chats: readonly Pick<ChatSummary, 'unread'>[]): string {
  const unread = chats.reduce((n, c) => n + Math.max(0, c.unread), 0);
  return unread > 0 ? `(${unread}) ${APP_TITLE}` : APP_TITLE;
}

/** Follows the session's chat list; returns the function that stops following. */
export function trackTitle(s: Session): () => void {
  document.title = titleFor(s.chats.list());
  return s.on('chats', (chats) => {
    document.title = titleFor(chats);
  });
}
