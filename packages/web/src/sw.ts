/**
 * The service worker, served as /sw.js so its scope is the whole app. It keeps this build's app
 * shell so the app opens offline, shows push notifications, and opens the right chat when one is
 * clicked: the push payload never carries message text (the service sends `{title, body, chat}`
 * with a fixed body), and the worker keeps no keys, so it decrypts nothing. It also answers
 * /media/<token> for the page's audio elements (voice messages) with bytes the page hands it on
 * demand, never kept here (see `media`).
 * Self-contained on purpose (no imports), so the build emits it as one classic script.
 */
export type {};
const sw = globalThis as unknown as ServiceWorkerGlobalScope;

/**
 * The build's files and the SHA-256 of each (base64), put here by the build (vite.config.ts,
 * swShell): index.html, every file under /assets/ and the static icons and manifest, with a
 * version that changes with any of them.
 */
declare const __SVC_SHELL__: { version: string; sha256: Record<string, string> };
const SHELL = __SVC_SHELL__;
const FILES = Object.keys(SHELL.sha256);
const CACHE_PREFIX = 'svc-shell-';
const CACHE = CACHE_PREFIX + SHELL.version;

/** The service's own answers: never cached, never answered from a cache (docs/API.md: `Cache-Control: no-store`). */
function isService(path: string): boolean {
  return path.startsWith('/api/') || path === '/api' || path === '/healthz' || path.startsWith('/healthz/');
}

async function installShell(): Promise<void> {
  const cache = await caches.open(CACHE);
  // "reload": straight from the service, not from the HTTP cache of an older build.
  await cache.addAll(FILES.map((f) => new Request(f, { cache: 'reload' })));
}

async function dropOldShells(): Promise<void> {
  for (const name of await caches.keys()) {
    if (name.startsWith(CACHE_PREFIX) && name !== CACHE) await caches.delete(name);
  }
}

async function sha256(res: Response): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', await res.clone().arrayBuffer()));
  let s = '';
  for (const b of digest) s += String.fromCharCode(b);
  return btoa(s);
}

/**
 * Whether `res` is this build's `path`: its bytes hash to the build's list, and it came from the
 * network ("basic"), so its headers (the CSP of index.html among them) are the service's.
 */
async function isBuilds(path: string, res: Response): Promise<boolean> {
  const want = SHELL.sha256[path];
  return want !== undefined && res.ok && res.type === 'basic' && (await sha256(res)) === want;
}

/**
 * This build's `path` from the cache. Any page script of the origin can write that cache, so an
 * injected script could otherwise make itself the app for good: a copy that is not the build's
 * is dropped, and the caller goes to the network.
 */
async function fromShell(path: string): Promise<Response | undefined> {
  const cache = await caches.open(CACHE);
  const hit = await cache.match(path);
  if (!hit) return undefined;
  if (await isBuilds(path, hit)) return hit;
  await cache.delete(path);
  return undefined;
}

/** From the network, and kept for offline use when it is this build's file. */
async function fetchAndKeep(req: Request, path: string): Promise<Response> {
  const res = await fetch(req);
  if (await isBuilds(path, res)) await (await caches.open(CACHE)).put(path, res.clone());
  return res;
}

/** Pages: the service's index.html when it answers (a newer build shows at once), else this build's. */
async function navigate(req: Request): Promise<Response> {
  try {
    return await fetch(req);
  } catch (e) {
    const shell = await fromShell('/index.html');
    if (shell) return shell;
    throw e;
  }
}

/** Hashed assets never change under their name: the build's cached copy is the right one. */
async function cacheFirst(req: Request, path: string): Promise<Response> {
  return (await fromShell(path)) ?? fetchAndKeep(req, path);
}

/** Icons and manifest are not hashed: fresh when online, this build's when not. */
async function networkFirst(req: Request, path: string): Promise<Response> {
  try {
    return await fetch(req);
  } catch (e) {
    const hit = await fromShell(path);
    if (hit) return hit;
    throw e;
  }
}

/*
 * Voice messages. The CSP (a header the service sends and a page cannot loosen) lets media load
 * from the origin only, not from blob: or data: URLs, so the page plays a decrypted recording from
 * /media/<token>, a same-origin URL this worker answers. The bytes stay in the page's memory: for
 * each request the worker asks the page that made it (the media element's document) over a
 * MessageChannel for the range it needs, and builds the response from the answer; nothing goes to
 * Cache Storage or to disk. A token the page no longer holds (its message left the screen) is 404.
 */
const MEDIA_RE = /^\/media\/([A-Za-z0-9_-]{22,64})$/;
const MEDIA_TIMEOUT_MS = 10_000;

/** A `Range: bytes=…` header as the page's side reads it: from-to, from-end, or the last n bytes. */
type MediaRange = { start: number; end: number | null } | { suffix: number } | null;

/** What the page answers: a slice of the recording, or why there is none. */
type MediaAnswer = { mime: string; total: number; start: number; bytes: ArrayBuffer } | { missing: true } | { unsatisfiable: true; total: number };

/** The one range of a Range header; null when there is none or it cannot be read (then the whole file is sent). */
function mediaRange(header: string | null): MediaRange {
  const m = header ? /^bytes=(\d*)-(\d*)$/.exec(header.trim()) : null;
  if (!m || (m[1] === '' && m[2] === '')) return null;
  if (m[1] === '') return { suffix: Number(m[2]) };
  return { start: Number(m[1]), end: m[2] === '' ? null : Number(m[2]) };
}

function askPage(client: Client, token: string, range: MediaRange): Promise<MediaAnswer | null> {
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    const timer = setTimeout(() => {
      channel.port1.close();
      resolve(null);
    }, MEDIA_TIMEOUT_MS);
    channel.port1.onmessage = (e: MessageEvent<MediaAnswer>) => {
      clearTimeout(timer);
      channel.port1.close();
      resolve(e.data);
    };
    client.postMessage({ type: 'media-request', token, range }, [channel.port2]);
  });
}

/** A media type the worker passes on as it is: audio only (a voice message), with its parameters. */
const AUDIO_TYPE = /^audio\/[a-z0-9.+-]+(;[ a-z0-9=.+-]*)*$/i;

async function media(event: FetchEvent, token: string): Promise<Response> {
  const range = mediaRange(event.request.headers.get('range'));
  const own = event.clientId ? await sw.clients.get(event.clientId) : undefined;
  const pages = own ? [own] : await sw.clients.matchAll({ type: 'window' });
  // The bytes are another person's: whatever they claim to be, they are played, never rendered.
  const common = { 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff', 'Content-Security-Policy': "default-src 'none'; sandbox" };
  for (const page of pages) {
    const a = await askPage(page, token, range);
    if (!a || 'missing' in a) continue;
    if ('unsatisfiable' in a) return new Response(null, { status: 416, headers: { ...common, 'Content-Range': `bytes */${a.total}` } });
    const headers: Record<string, string> = {
      ...common,
      'Content-Type': AUDIO_TYPE.test(a.mime) ? a.mime : 'application/octet-stream',
      'Content-Length': String(a.bytes.byteLength),
      'Accept-Ranges': 'bytes',
    };
    if (!range) return new Response(a.bytes, { status: 200, headers });
    headers['Content-Range'] = `bytes ${a.start}-${a.start + a.bytes.byteLength - 1}/${a.total}`;
    return new Response(a.bytes, { status: 206, headers });
  }
  return new Response('This recording is no longer on the page.', { status: 404, headers: { ...common, 'Content-Type': 'text/plain' } });
}

/** How the worker answers a request, or null to leave it to the browser. */
function answer(req: Request, event: FetchEvent): Promise<Response> | null {
  if (req.method !== 'GET') return null;
  const url = new URL(req.url);
  if (url.origin !== sw.location.origin || isService(url.pathname)) return null;
  const token = MEDIA_RE.exec(url.pathname)?.[1];
  if (token && req.mode !== 'navigate') return media(event, token);
  if (req.mode === 'navigate') return navigate(req);
  if (url.pathname.startsWith('/assets/')) return cacheFirst(req, url.pathname);
  if (FILES.includes(url.pathname)) return networkFirst(req, url.pathname);
  return null;
}

interface PushPayload {
  title?: unknown;
  body?: unknown;
  chat?: unknown;
}

const CHAT_RE = /^(room:[A-Za-z0-9_-]{1,64}|dm:[a-z0-9_]{2,32})$/;

function readPayload(data: PushMessageData | null): { title: string; body: string; chat: string | null } {
  let p: PushPayload;
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

sw.addEventListener('install', (event) => {
  // This build's shell is complete before the worker takes over; then it replaces the old one at once.
  event.waitUntil(installShell().then(() => sw.skipWaiting()));
});

sw.addEventListener('activate', (event) => {
  event.waitUntil(dropOldShells().then(() => sw.clients.claim()));
});

sw.addEventListener('fetch', (event) => {
  const res = answer(event.request, event);
  if (res) event.respondWith(res);
});

// A page loaded past the worker (a hard reload) asks to be controlled, so its voice messages can play.
sw.addEventListener('message', (event) => {
  const data = event.data as { type?: unknown } | null;
  if (data?.type === 'claim') event.waitUntil(sw.clients.claim());
});

/** Whether the app is locked (app/lock.ts): then a notification names no chat. */
async function locked(): Promise<boolean> {
  const hit = await caches
    .open('svc-lock')
    .then((c) => c.match('/locked'))
    .catch(() => undefined);
  return hit !== undefined;
}

sw.addEventListener('push', (event) => {
  const { title, body, chat } = readPayload(event.data);
  event.waitUntil(
    locked().then((hide) =>
      sw.registration.showNotification(hide ? 'New message' : title, {
        body: hide ? '' : body,
        tag: hide ? 'svc' : (chat ?? 'svc'),
        icon: '/icon-192.png',
        badge: '/icon-192.png',
        data: { chat: hide ? null : chat },
      }),
    ),
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
