/**
 * A notification while the page is hidden: the device's stream is open, so the service sends no
 * push (the device is online), and the app shows the same notification itself through the service
 * worker, so a click opens the chat. Like a push, it names the chat ("@nick", "#room") and never
 * shows the text. Only a message a person wrote counts: never a reaction, receipt or edit; and
 * the caller asks the SDK first (`shouldNotify`: a muted chat notifies only of a mention).
 * When messages of a chat disappear, the notifications shown for that chat close.
 */
import type { ChatMessage } from '@svc/sdk';

/** `me`: the signed-in nick; `roomName`: a room's name by its id, when known. */
export function notifyHidden(me: string, roomName: (id: string) => string | undefined, message: ChatMessage): void {
  if (typeof document === 'undefined' || document.visibilityState !== 'hidden') return;
  if (message.from === me || (message.kind !== 'text' && message.kind !== 'unknown')) return;
  if (!('Notification' in window) || Notification.permission !== 'granted' || !('serviceWorker' in navigator)) return;
  const title = message.chat.startsWith('room:') ? `#${roomName(message.chat.slice(5)) ?? 'room'}` : `@${message.from}`;
  void navigator.serviceWorker.ready
    .then((reg) =>
      reg.showNotification(title, {
        body: 'New message',
        tag: message.chat,
        icon: '/icon-192.png',
        badge: '/icon-192.png',
        data: { chat: message.chat },
      }),
    )
    .catch(() => undefined);
}

/** Closes the notifications shown for `chat` (its messages disappeared). */
export function closeNotifications(chat: string): void {
  if (typeof navigator === 'undefined' || !('serviceWorker' in navigator)) return;
  void navigator.serviceWorker.ready
    .then((reg) => reg.getNotifications({ tag: chat }))
    .then((shown) => {
      for (const notification of shown) notification.close();
    })
    .catch(() => undefined);
}
