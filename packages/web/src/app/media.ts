/**
 * Decrypted recordings for the page's audio elements, played from /media/<token>: the service
 * worker answers that URL by asking this page for the bytes (src/sw.ts, "Voice messages"), since
 * the CSP lets media load from the origin only (no blob: or data: URL). The bytes stay here, in
 * memory, for as long as their element is in the document: a token whose element left it is
 * revoked, and the worker then answers 404. Nothing is written to Cache Storage or to disk.
 */

interface Held {
  el: Element;
  bytes: Uint8Array;
  mime: string;
  since: number;
  seen: boolean;
}

type MediaRange = { start: number; end: number | null } | { suffix: number } | null;

/** An element not yet in the document this long after its token was made is given up. */
const UNATTACHED_MS = 10_000;
const CONTROL_WAIT_MS = 8_000;

const held = new Map<string, Held>();
let started = false;
let observer: MutationObserver | null = null;
let sweepTimer: ReturnType<typeof setTimeout> | null = null;

function token(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(18));
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_');
}

/** Revokes the tokens whose element has left the document. */
function sweep(): void {
  sweepTimer = null;
  const now = Date.now();
  for (const [key, entry] of held) {
    if (entry.el.isConnected) entry.seen = true;
    else if (entry.seen || now - entry.since > UNATTACHED_MS) held.delete(key);
  }
  if (held.size === 0) {
    observer?.disconnect();
    observer = null;
  }
}

/** Forgets every recording at once (the app locks or signs out): the worker answers 404 from now on. */
export function forgetAllMedia(): void {
  held.clear();
  sweep();
}

function scheduleSweep(): void {
  sweepTimer ??= setTimeout(sweep, 1_000);
}

/** The answer to one request of the worker: the range asked for, clamped to the recording. */
function slice(asked: string, range: MediaRange): unknown {
  const entry = held.get(asked);
  if (!entry) return { missing: true };
  const total = entry.bytes.length;
  let start = 0;
  let end = total - 1;
  if (range && 'suffix' in range) start = Math.max(0, total - range.suffix);
  else if (range) {
    start = range.start;
    if (range.end !== null) end = Math.min(range.end, total - 1);
  }
  if (start >= total || start > end) return range ? { unsatisfiable: true, total } : { mime: entry.mime, total, start: 0, bytes: new ArrayBuffer(0) };
  const bytes = entry.bytes.slice(start, end + 1).buffer;
  return { mime: entry.mime, total, start, bytes };
}

function listen(): void {
  if (started || !('serviceWorker' in navigator)) return;
  started = true;
  navigator.serviceWorker.addEventListener('message', (event: MessageEvent<{ type?: unknown; token?: unknown; range?: MediaRange }>) => {
    if (event.data?.type !== 'media-request' || typeof event.data.token !== 'string') return;
    const port = event.ports[0];
    if (!port) return;
    const answer = slice(event.data.token, event.data.range ?? null) as { bytes?: ArrayBuffer };
    port.postMessage(answer, answer.bytes ? [answer.bytes] : []);
  });
  navigator.serviceWorker.startMessages();
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * Whether the service worker controls this page, waiting for it if need be: on the first visit it
 * takes over once installed; a page loaded past it (a hard reload) asks it to.
 */
export async function mediaReady(waitMs = CONTROL_WAIT_MS): Promise<boolean> {
  if (!('serviceWorker' in navigator)) return false;
  listen();
  const sw = navigator.serviceWorker;
  if (sw.controller) return true;
  const changed = new Promise<void>((r) => sw.addEventListener('controllerchange', () => r(), { once: true }));
  const reg = await Promise.race([sw.ready, sleep(waitMs).then(() => null)]);
  if (!reg) return sw.controller !== null;
  if (!sw.controller) reg.active?.postMessage({ type: 'claim' });
  await Promise.race([changed, sleep(waitMs)]);
  return sw.controller !== null;
}

/** A same-origin URL that plays `bytes` for as long as `el` is in the document. */
export function mediaUrl(el: Element, bytes: Uint8Array, mime: string): string {
  listen();
  const minted = token();
  held.set(minted, { el, bytes, mime, since: Date.now(), seen: el.isConnected });
  if (!observer) {
    observer = new MutationObserver(scheduleSweep);
    observer.observe(document.body, { childList: true, subtree: true });
  }
  scheduleSweep();
  return `/media/${minted}`;
}
