/**
 * A notification while the page is hidden: the device's stream is open, so the service sends no
 * push (the device is online), and the app shows the same notification itself through the service
 * worker, so a click opens the chat. Like a push, it names the chat ("@nick", "#room") and never
 * shows the text. Only a message a person wrote counts: never a reaction, receipt or edit.
 */
import type { ChatMessage } from '@svc/sdk';

/** `me`: the signed-in nick; `roomName`: a room's name by its id, when known. */
export function notifyHidden(me: string, roomName: (id: string) => string | undefined, m: ChatMessage): void {
  if (typeof document === 'undefined' || document.visibilityState !== 'hidden') return;
  if (m.from === me || (m.kind !== 'text' && m.kind !== 'unknown')) return;
  if (!('Notification' in window) || Notification.permission !== 'granted' || !('serviceWorker' in navigator)) return;
  const title = m.chat.startsWith('room:') ? `#${roomName(m.chat.slice(5)) ?? 'room'}` : `@${m.from}`;
  void navigator.serviceWorker.ready
    .then((reg) =>
      reg.showNotification(title, { body: 'New message', tag: m.chat, icon: '/icon-192.png', badge: '/icon-192.png', data: { chat: m.chat } }),
    )
    .catch(() => undefined);
}
