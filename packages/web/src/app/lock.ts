/**
 * The app lock's settings and its idle clock, on this device: "Lock after" (`svc.lock-after`, in
 * ms, 0 = never) and the time of the last pointer or keyboard input in any tab of the app
 * (`svc.active`), so a tab left open in the background does not lock while another is in use.
 * A lock or unlock in one tab is told to the others through `svc.lock-event`.
 */
export const LOCK_CHOICES = [
  { label: 'Never', ms: 0 },
  { label: '1 minute', ms: 60_000 },
  { label: '5 minutes', ms: 300_000 },
  { label: '1 hour', ms: 3_600_000 },
] as const;

const AFTER = 'svc.lock-after';
const ACTIVE = 'svc.active';
const EVENT = 'svc.lock-event';

/** The chosen idle time before the app locks, in ms; 0 when it never locks by itself. */
export function lockAfter(): number {
  const v = Number(localStorage.getItem(AFTER));
  return LOCK_CHOICES.some((c) => c.ms === v) ? v : 0;
}

export function setLockAfter(ms: number): void {
  if (!LOCK_CHOICES.some((c) => c.ms === ms)) throw new Error(`"Lock after" takes one of its choices, not ${ms} ms.`);
  if (ms === 0) localStorage.removeItem(AFTER);
  else localStorage.setItem(AFTER, String(ms));
  markActive();
}

function markActive(): void {
  localStorage.setItem(ACTIVE, String(Date.now()));
}

/** Tells the app's other tabs that it was locked or unlocked here. */
export function tellTabs(what: 'lock' | 'unlock'): void {
  localStorage.setItem(EVENT, `${what} ${Date.now()}`);
}

/** Calls `f` when another tab locks or unlocks the app. Returns the function that stops listening. */
export function onTabs(f: (what: 'lock' | 'unlock') => void): () => void {
  const listen = (e: StorageEvent) => {
    if (e.key !== EVENT || !e.newValue) return;
    const what = e.newValue.split(' ')[0];
    if (what === 'lock' || what === 'unlock') f(what);
  };
  window.addEventListener('storage', listen);
  return () => window.removeEventListener('storage', listen);
}

const INPUT = ['pointerdown', 'pointermove', 'keydown', 'wheel', 'touchstart'] as const;

/**
 * Calls `onIdle` once no tab of the app had pointer or keyboard input for the chosen time.
 * Returns the function that stops watching.
 */
export function watchIdle(onIdle: () => void): () => void {
  let last = Date.now();
  markActive();
  const onInput = () => {
    const now = Date.now();
    // Written at most once a second, so moving the pointer costs nothing.
    if (now - last < 1_000) return;
    last = now;
    markActive();
  };
  for (const type of INPUT) window.addEventListener(type, onInput, { capture: true, passive: true });
  const timer = setInterval(() => {
    const after = lockAfter();
    if (after === 0) return;
    const active = Math.max(last, Number(localStorage.getItem(ACTIVE)) || 0);
    if (Date.now() - active >= after) onIdle();
  }, 1_000);
  return () => {
    clearInterval(timer);
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
  for (const n of (await reg?.getNotifications()) ?? []) n.close();
}
