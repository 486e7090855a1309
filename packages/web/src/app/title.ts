/**
 * The tab title: "Messenger", or "(N) Messenger" while N messages wait unread across all chats,
 * so a background tab shows that something arrived. A muted chat adds nothing, unless one of its
 * unread messages mentions the person. The sign-in screen has its own title.
 */
import type { ChatSummary } from './chats.js';
import type { Session } from './session.js';

export const APP_TITLE = 'Messenger';
export const SIGN_IN_TITLE = `Sign in · ${APP_TITLE}`;
/** The locked app's title: no count, nothing of any chat. */
export const LOCKED_TITLE = `Locked · ${APP_TITLE}`;

export function titleFor(chats: readonly Pick<ChatSummary, 'unread' | 'muted'>[]): string {
  const unread = chats.reduce((n, c) => n + (c.muted && !c.muted.mentioned ? 0 : Math.max(0, c.unread)), 0);
  return unread > 0 ? `(${unread}) ${APP_TITLE}` : APP_TITLE;
}

/** Follows the session's chat list; returns the function that stops following. */
export function trackTitle(session: Session): () => void {
  document.title = titleFor(session.chats.list());
  return session.on('chats', (chats) => {
    document.title = titleFor(chats);
  });
}
