/**
 * The service worker, served as /sw.js so its scope is the whole app. It only shows push
 * notifications and opens the right chat when one is clicked: the push payload never carries
 * message text (the service sends `{title, body, chat}` with a fixed body), and the worker keeps
 * no keys, so it decrypts nothing. It caches nothing either: the app needs the service to work.
 * Self-contained on purpose (no imports), so the build emits it as one classic script.
 */
export type {};
const sw = globalThis as unknown as ServiceWorkerGlobalScope;

interface PushPayload {
  title?: unknown;
  body?: unknown;
  chat?: unknown;
}

const CHAT_RE = /^(room:[A-Za-z0-9_-]{1,64}|dm:[a-z0-9_]{2,32})$/;

function readPayload(data: PushMessageData | null): { title: string; body: string; chat: string | null } {
  let p: PushPayload = {};
  try {
    p = (data?.json() ?? {}) as PushPayload;
  } catch {
    p = {};
  }
  const title = typeof p.title === 'string' && p.title.length > 0 ? p.title.slice(0, 100) : 'New message';
  const body = typeof p.body === 'string' ? p.body.slice(0, 200) : 'New message';
  const chat = typeof p.chat === 'string' && CHAT_RE.test(p.chat) ? p.chat : null;
  return { title, body, chat };
}

/** The app route of a chat; the app reads the hash, and the server serves index.html for "/". */
function chatUrl(chat: string | null): string {
  return new URL(chat ? `/#/chat/${chat}` : '/', sw.location.origin).href;
}

sw.addEventListener('install', () => {
  void sw.skipWaiting();
});

sw.addEventListener('activate', (event) => {
  event.waitUntil(sw.clients.claim());
});

sw.addEventListener('push', (event) => {
  const { title, body, chat } = readPayload(event.data);
  event.waitUntil(
    sw.registration.showNotification(title, {
      body,
      tag: chat ?? 'svc',
      icon: '/icon-192.png',
      badge: '/icon-192.png',
      data: { chat },
    }),
  );
});

sw.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const data = event.notification.data as { chat?: unknown } | null;
  const chat = typeof data?.chat === 'string' && CHAT_RE.test(data.chat) ? data.chat : null;
  const url = chatUrl(chat);
  event.waitUntil(
    (async () => {
      const windows = await sw.clients.matchAll({ type: 'window', includeUncontrolled: true });
      for (const client of windows) {
        if (new URL(client.url).origin !== sw.location.origin) continue;
        // An open app is told which chat to show, so it keeps its state; then it gets focus.
        client.postMessage({ type: 'open-chat', chat });
        await client.focus();
        return;
      }
      await sw.clients.openWindow(url);
    })(),
  );
});
