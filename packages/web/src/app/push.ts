/**
 * Notifications for this device: the service worker (/sw.js) shows a push as "@nick" or
 * "#room" with a fixed body (the push carries no message text) and opens the chat on click.
 * Turning them on subscribes with the service's VAPID key (GET /api/config) and registers the
 * subscription for this device; turning them off removes both. Once permission is given, the
 * rest (the browser's push service, then the service) must finish within PUSH_TIMEOUT_MS, so a
 * push service that never answers ends in an error the user can act on, not an endless wait.
 */
import type { Session } from './session.js';
import { scriptUrl } from './script-urls.js';

export const PUSH_TIMEOUT_MS = 10_000;

/** `work`, or a rejection saying what took too long after `ms`. */
function within<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(what)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

export function pushSupported(): boolean {
  return 'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window;
}

export async function registerServiceWorker(): Promise<ServiceWorkerRegistration | null> {
  if (!('serviceWorker' in navigator)) return null;
  try {
    return await navigator.serviceWorker.register(scriptUrl('/sw.js'), { scope: '/' });
  } catch (error) {
    console.warn('service worker registration failed:', error);
    return null;
  }
}

function vapidBytes(b64url: string): Uint8Array<ArrayBuffer> {
  const binary = atob(b64url.replace(/-/g, '+').replace(/_/g, '/') + '==='.slice((b64url.length + 3) % 4));
  const out = new Uint8Array(new ArrayBuffer(binary.length));
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

async function registration(): Promise<ServiceWorkerRegistration> {
  const reg = (await navigator.serviceWorker.getRegistration('/')) ?? (await registerServiceWorker());
  if (!reg) throw new Error('The service worker is not available in this browser.');
  return reg;
}

/** Whether this browser currently holds a push subscription for the app. */
export async function pushEnabled(): Promise<boolean> {
  if (!pushSupported()) return false;
  const reg = await navigator.serviceWorker.getRegistration('/');
  return Boolean(reg && (await reg.pushManager.getSubscription()) && Notification.permission === 'granted');
}

export async function enablePush(session: Session): Promise<void> {
  if (!pushSupported()) throw new Error('This browser does not support push notifications.');
  // No time limit here: the browser may be asking the person, who takes the time they need.
  const permission = await Notification.requestPermission();
  if (permission !== 'granted') throw new Error('Notifications are blocked for this site in the browser settings.');
  const seconds = Math.round(PUSH_TIMEOUT_MS / 1000);
  await within(
    subscribe(session),
    PUSH_TIMEOUT_MS,
    `Notifications could not be turned on: no answer within ${seconds} seconds from the browser’s push service or from the service. Check the connection and try again.`,
  );
}

async function subscribe(session: Session): Promise<void> {
  const { vapidPublicKey } = await session.messenger.api.config();
  const reg = await registration();
  await navigator.serviceWorker.ready;
  let sub = await reg.pushManager.getSubscription();
  if (!sub) sub = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: vapidBytes(vapidPublicKey) });
  const json = sub.toJSON();
  if (!json.endpoint || !json.keys?.p256dh || !json.keys.auth) throw new Error('The browser returned an incomplete push subscription.');
  await session.messenger.api.setPush({ endpoint: json.endpoint, keys: { p256dh: json.keys.p256dh, auth: json.keys.auth } }, session.deviceId);
}

export async function disablePush(session: Session): Promise<void> {
  if (pushSupported()) {
    const reg = await navigator.serviceWorker.getRegistration('/');
    const sub = await reg?.pushManager.getSubscription();
    await sub?.unsubscribe();
  }
  await session.messenger.api.deletePush(session.deviceId);
}

/** The service worker asks an open app to show a chat (a notification was clicked). */
export function onOpenChatRequest(handler: (chat: string) => void): void {
  if (!('serviceWorker' in navigator)) return;
  navigator.serviceWorker.addEventListener('message', (event: MessageEvent<{ type?: unknown; chat?: unknown }>) => {
    if (event.data?.type === 'open-chat' && typeof event.data.chat === 'string') handler(event.data.chat);
  });
}
