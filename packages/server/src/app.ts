/**
 * createApp(config, options): the whole service as a Fastify instance, testable in-process
 * with real stores. The request pipeline follows docs/API.md:
 *   origin check → body-size check → routing → session (401) → write limit (429) → handler
 * and inside the handler: parse (bad_json, too_large) → shape (invalid) → rights → business rules.
 */
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import { ApiError, LIMITS } from '@svc/protocol';
import type { DestinationStream } from 'pino';
import { attachmentTtlMs, type Config } from './config.js';
import type { Deps, Secrets } from './domain/deps.js';
import { whenDurable } from './domain/durability.js';
import type { Store } from './store/types.js';
import { LocalStreams } from './bus/streams.js';
import { openCoordination, openStore } from './backends.js';
import type { Pusher } from './push/types.js';
import { WebPusher } from './push/web-push.js';
import { fullLengthVapidPrivateKey, newVapidKeys, type VapidKeys } from './push/vapid-keys.js';
import type { Resolver } from './push/connection.js';
import { checkOrigin } from './http/origin.js';
import { frameworkError, sendError } from './http/errors.js';
import { clientErrorHandler } from './http/client-error.js';
import { SECURITY_HEADERS } from './http/headers.js';
import { registerStatic } from './http/static.js';
import { registerRoutes } from './routes/index.js';
import { randomSecret } from './crypto.js';
import { registerMetrics } from './ops/metrics.js';
import { errorForLog } from './log-error.js';
import { AttachmentCache } from './domain/attachment-cache.js';

export interface AppOptions {
  store?: Store;
  pusher?: Pusher;
  /** Name resolution for push connections (tests inject one; the system resolver otherwise). */
  pushResolver?: Resolver;
  now?: () => number;
  /** With Redis: how long a device stays online after its instance stops refreshing it (tests shorten it). */
  presenceTtlS?: number;
  /** Where log lines go (tests capture them); stdout by default. */
  logStream?: DestinationStream;
  /** Slow-client bounds (docs/SECURITY.md); tests shorten them so they need not wait 30 s. */
  timeouts?: Partial<Timeouts>;
  /** The store cannot go on (StoreOpenOptions.onFatal); the entry point stops the process. */
  onStoreFatal?: (err: unknown) => void;
}

export interface Timeouts {
  /** The request line and headers must arrive within this time. */
  headersMs: number;
  /** The whole request, body included, must arrive within this time. */
  requestMs: number;
  /** How often the server looks for connections past those bounds (Node's default is 30 s, which would let a slow client stay 40 s). */
  checkEveryMs: number;
}

const DEFAULT_TIMEOUTS: Timeouts = { headersMs: 10_000, requestMs: 30_000, checkEveryMs: 1_000 };

export interface App {
  fastify: FastifyInstance;
  deps: Deps;
  streams: LocalStreams;
  /** Graceful stop: streams end, in-flight requests get `graceMs` to finish, then the store closes. */
  close(graceMs?: number): Promise<void>;
}

const PURGE_EVERY_MS = 10 * 60 * 1000;
const SHUTDOWN_GRACE_MS = 2_000;

/** Secrets every instance must share live in the store; the first start creates them. */
async function loadSecrets(config: Config, store: Store): Promise<Secrets> {
  const server = await store.getOrCreateMeta('server_secret', () => randomSecret(32));
  if (config.vapid.publicKey && config.vapid.privateKey) {
    return { server, vapidPublicKey: config.vapid.publicKey, vapidPrivateKey: fullLengthVapidPrivateKey(config.vapid.privateKey) };
  }
  const vapid = JSON.parse(await store.getOrCreateMeta('vapid_keys', () => JSON.stringify(newVapidKeys()))) as VapidKeys;
  // A key kept by an older build may lack its leading zero bytes (push/vapid-keys.ts).
  return { server, vapidPublicKey: vapid.publicKey, vapidPrivateKey: fullLengthVapidPrivateKey(vapid.privateKey) };
}

export async function createApp(config: Config, opts: AppOptions = {}): Promise<App> {
  const timeouts: Timeouts = { ...DEFAULT_TIMEOUTS, ...opts.timeouts };
  const fastify = Fastify({
    // Every error logged anywhere (`{ err }`, by this code or by the framework) keeps only its
    // message, code and stack (log-error.ts): docs/API.md keeps row values out of the log.
    logger: { level: config.logLevel, base: null, serializers: { err: errorForLog as never }, ...(opts.logStream ? { stream: opts.logStream } : {}) },
    logController: new LogController({ disableRequestLogging: true }),
    // No per-request child logger: nothing logs through request.log, docs/API.md keeps
    // request data (a request id included) out of the log, and a pino child for every request
    // would cost an allocation and a serialised binding each.
    childLoggerFactory: (logger) => logger,
    bodyLimit: LIMITS.bodyBytes,
    // Slow clients cannot hold a connection forever: whole request in 30 s, headers in 10 s.
    requestTimeout: timeouts.requestMs,
    http: { connectionsCheckingInterval: timeouts.checkEveryMs },
    // Malformed, oversized or too slow requests get the service's error form, not the framework's.
    clientErrorHandler,
    connectionTimeout: 0,
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    // A long path parameter reaches its handler (which refuses it by its checks, docs/API.md)
    // rather than the router's own 414; the URL as a whole is bounded by Node's 16 KiB header limit.
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 16 * 1024 },
    frameworkErrors: frameworkError,
    // HEAD answers like GET without a body wherever GET exists (RFC 9110 §9.3.2).
    exposeHeadRoutes: true,
  });
  fastify.server.headersTimeout = timeouts.headersMs;

  // Writes settle before the disk has them; whatever answers a write waits for it to be durable (domain/durability.ts).
  const store = opts.store ?? (await openStore(config, { settleBeforeSync: true, ...(opts.onStoreFatal ? { onFatal: opts.onStoreFatal } : {}) }));
  const streams = new LocalStreams(LIMITS.pingIntervalMs);
  // A VAPID key made now must be on disk before any client can subscribe with it.
  const secrets = await whenDurable(store, () => loadSecrets(config, store));
  const { bus, limiter, known } = await openCoordination(config, streams, fastify.log, {
    keySecret: secrets.server,
    presenceTtlS: opts.presenceTtlS,
    now: opts.now,
  });
  const pusher =
    opts.pusher ??
    new WebPusher({
      store,
      log: fastify.log,
      vapid: { subject: config.vapid.subject, publicKey: secrets.vapidPublicKey, privateKey: secrets.vapidPrivateKey },
      allowPrivate: config.pushAllowPrivateTargets,
      ...(opts.pushResolver ? { resolve: opts.pushResolver } : {}),
    });
  const deps: Deps = {
    config,
    store,
    bus,
    limiter,
    known,
    pusher,
    attachmentCache: new AttachmentCache(config.attachments ? config.attachmentCacheBytes : 0),
    secrets,
    log: fastify.log,
    now: opts.now ?? Date.now,
  };

  // Bodies are collected raw (any content type, 32 KiB at most) and parsed by the handler,
  // so that the session and rate-limit checks come before bad_json, as docs/API.md orders them.
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  // The hooks every request runs are synchronous, in callback form: an async hook costs every
  // request a promise and a turn of the microtask queue for nothing.
  fastify.addHook('onRequest', (req, _reply, done) => {
    try {
      checkOrigin(config.origin, req.method, req.headers);
      const declared = req.headers['content-length'];
      if (declared !== undefined && Number(declared) > LIMITS.bodyBytes) throw new ApiError('too_large');
      // Routing comes before the body (docs/API.md): an unknown path answers not_found
      // whatever its Content-Type, which the framework would otherwise refuse first when malformed.
      if (req.is404) delete req.headers['content-type'];
    } catch (err) {
      done(err as Error);
      return;
    }
    done();
  });

  fastify.addHook('onSend', (req, reply, payload, done) => {
    reply.headers(SECURITY_HEADERS);
    if (!reply.hasHeader('cache-control') && (req.url.startsWith('/api/') || req.url === '/healthz' || req.url.startsWith('/healthz?'))) {
      reply.header('cache-control', 'no-store');
    }
    done(null, payload);
  });

  // The request log of docs/API.md: no path, IP, nick, query, cookie, header or body.
  // Levels are fixed at start (LOG_LEVEL): below info the hook is not even registered.
  if (['trace', 'debug', 'info'].includes(config.logLevel)) {
    fastify.addHook('onResponse', (req, reply, done) => {
      const line: Record<string, unknown> = { method: req.method, status: reply.statusCode, ms: Math.round(reply.elapsedTime) };
      if (req.url.startsWith('/api/')) line.route = req.routeOptions.url ?? null;
      deps.log.info(line, 'request');
      done();
    });
  }

  // Prometheus metrics on 127.0.0.1:METRICS_PORT when set (ops/metrics.ts); never on this listener.
  await registerMetrics(fastify, deps, streams);

  fastify.setErrorHandler((err, _req, reply) => sendError(reply, err, deps.log));

  fastify.get('/healthz', async (_req, reply) => {
    reply.header('content-type', 'text/plain; charset=utf-8').header('cache-control', 'no-store');
    return 'ok';
  });

  registerRoutes(fastify, deps);
  const hasWeb = await registerStatic(fastify, config.webRoot);

  fastify.setNotFoundHandler(async (req, reply) => {
    if (req.url.startsWith('/api/') || !hasWeb || (req.method !== 'GET' && req.method !== 'HEAD')) throw new ApiError('not_found');
    reply.header('cache-control', 'no-cache');
    return reply.sendFile('index.html');
  });

  const purger = setInterval(() => {
    store
      .purge(deps.now(), { attachmentTtlMs: attachmentTtlMs(config) })
      .then((r) => (r.sessionIds.length > 0 ? bus.closeStreams({ sessions: r.sessionIds }) : undefined))
      .catch((err: unknown) => deps.log.error({ err }, 'purge failed'));
  }, PURGE_EVERY_MS);
  purger.unref();

  let closing: Promise<void> | null = null;
  const close = (graceMs = SHUTDOWN_GRACE_MS): Promise<void> => {
    closing ??= (async () => {
      clearInterval(purger);
      // Streams first: they are long-lived and would keep the server from closing. Each one
      // releases its presence as it ends, so other instances see the device offline at once.
      streams.closeAll();
      // In-flight requests get a grace period to finish; connections still open after it are cut.
      const grace = setTimeout(() => fastify.server.closeAllConnections(), graceMs);
      await fastify.close();
      clearTimeout(grace);
      await pusher.close();
      await bus.close();
      await known.close();
      await limiter.close();
      await store.close();
    })();
    return closing;
  };

  return { fastify, deps, streams, close };
}
