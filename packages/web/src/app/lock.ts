/**
 * The app lock's settings and its idle clock, on this device: "Lock after" (`svc.lock-after`, in
 * ms, 0 = never, the one value stored) and the last pointer or keyboard input in any tab of the
 * app, so a tab left open in the background does not lock while another is in use. The tabs tell
 * each other of input, and of a lock or an unlock, over a BroadcastChannel: no time of use is
 * written anywhere (nothing at rest tells when the app was used, docs/CRYPTO.md).
 */
export const LOCK_CHOICES = [
  { label: 'Never', ms: 0 },
  { label: '1 minute', ms: 60_000 },
  { label: '5 minutes', ms: 300_000 },
  { label: '1 hour', ms: 3_600_000 },
] as const;

const AFTER = 'svc.lock-after';
/** The tabs' channel: `{ what: 'active' | 'lock' | 'unlock' }`. */
const CHANNEL = 'svc-lock';

type TabMessage = { what: 'active' | 'lock' | 'unlock' };

let channel: BroadcastChannel | null | undefined;
function tabs(): BroadcastChannel | null {
  if (channel === undefined) channel = typeof BroadcastChannel === 'undefined' ? null : new BroadcastChannel(CHANNEL);
  return channel;
}

function post(what: TabMessage['what']): void {
  tabs()?.postMessage({ what } satisfies TabMessage);
}

function listen(handler: (what: TabMessage['what']) => void): () => void {
  const ch = tabs();
  if (!ch) return () => undefined;
  const on = (event: MessageEvent) => {
    const what = (event.data as Partial<TabMessage> | null)?.what;
    if (what === 'active' || what === 'lock' || what === 'unlock') handler(what);
  };
  ch.addEventListener('message', on);
  return () => ch.removeEventListener('message', on);
}

/** The chosen idle time before the app locks, in ms; 0 when it never locks by itself. */
export function lockAfter(): number {
  const chosen = Number(localStorage.getItem(AFTER));
  return LOCK_CHOICES.some((c) => c.ms === chosen) ? chosen : 0;
}

export function setLockAfter(ms: number): void {
  if (!LOCK_CHOICES.some((c) => c.ms === ms)) throw new Error(`"Lock after" takes one of its choices, not ${ms} ms.`);
  if (ms === 0) localStorage.removeItem(AFTER);
  else localStorage.setItem(AFTER, String(ms));
  post('active');
}

/** Tells the app's other tabs that it was locked or unlocked here. */
export function tellTabs(what: 'lock' | 'unlock'): void {
  post(what);
}

/** Calls `f` when another tab locks or unlocks the app. Returns the function that stops listening. */
export function onTabs(handler: (what: 'lock' | 'unlock') => void): () => void {
  return listen((what) => {
    if (what !== 'active') handler(what);
  });
}

const INPUT = ['pointerdown', 'pointermove', 'keydown', 'wheel', 'touchstart'] as const;

/**
 * Calls `onIdle` once no tab of the app had pointer or keyboard input for the chosen time.
 * Returns the function that stops watching.
 */
export function watchIdle(onIdle: () => void): () => void {
  let last = Date.now();
  post('active');
  const onInput = () => {
    const now = Date.now();
    // Told at most once a second, so moving the pointer costs nothing.
    if (now - last < 1_000) return;
    last = now;
    post('active');
  };
  // Input in another tab counts as input here, timed by this tab's own clock.
  const stop = listen((what) => {
    if (what === 'active') last = Date.now();
  });
  for (const type of INPUT) window.addEventListener(type, onInput, { capture: true, passive: true });
  const check = () => {
    const after = lockAfter();
    if (after === 0) return;
    if (Date.now() - last >= after) onIdle();
  };
  const timer = setInterval(check, 1_000);
  // A tab in the background is throttled, and one coming back from sleep paints what it held:
  // it checks the moment it shows again, before the next tick.
  const onShow = () => {
    if (document.visibilityState === 'visible') check();
  };
  document.addEventListener('visibilitychange', onShow);
  window.addEventListener('pageshow', onShow);
  return () => {
    clearInterval(timer);
    stop();
    document.removeEventListener('visibilitychange', onShow);
    window.removeEventListener('pageshow', onShow);
    for (const type of INPUT) window.removeEventListener(type, onInput, { capture: true });
  };
}

const LOCK_CACHE = 'svc-lock';

/**
 * Tells the service worker whether the app is locked (a flag in the Cache Storage, which it reads
 * when a push comes): a push while locked is shown as "New message" without the chat's name.
 * Locking also closes the notifications on screen, which name their chats.
 */
export async function tellWorker(locked: boolean): Promise<void> {
  if (typeof caches === 'undefined') return;
  const cache = await caches.open(LOCK_CACHE);
  if (!locked) {
    await cache.delete('/locked');
    return;
  }
  await cache.put('/locked', new Response('1'));
  if (!('serviceWorker' in navigator)) return;
  const reg = await navigator.serviceWorker.getRegistration();
  for (const notification of (await reg?.getNotifications()) ?? []) notification.close();
}
