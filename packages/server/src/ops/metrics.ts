/**
 * Prometheus metrics (prom-client), for operators. They are served on a listener of their own,
 * 127.0.0.1:METRICS_PORT (metrics-server.ts), never under the public origin, and only when
 * METRICS_PORT is set.
 *
 * No label carries a nick, a device or room id, an IP address or a concrete path: requests are
 * labelled by route template (`/api/rooms/:id/members`), method and status, which are few and
 * fixed. Each app instance has its own registry (never prom-client's global one), so several
 * instances in one process, as in the tests, do not clash.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../domain/deps.js';
import type { LocalStreams } from '../bus/streams.js';
import { RedisBus } from '../bus/redis.js';
import { WebPusher } from '../push/web-push.js';
import { startMetricsServer } from './metrics-server.js';

/** Methods Node's parser accepts are many; any other than these is counted as `other`. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']);

/** Label of a request that matched no route (404 under /api/, or the web client's index.html). */
const UNMATCHED = 'unmatched';

export interface Metrics {
  registry: Registry;
  /** Reads the store counts into their gauges, then renders every metric as Prometheus text. */
  render(): Promise<string>;
}

/** The metrics of one app instance, fed by hooks on `fastify` and read from the store, streams, pusher and bus. */
export function createMetrics(fastify: FastifyInstance, deps: Deps, streams: LocalStreams): Metrics {
  const registry = new Registry();
  const registers = [registry];
  collectDefaultMetrics({ register: registry, prefix: 'svc_' });

  const requests = new Counter({
    name: 'svc_http_requests_total',
    help: 'HTTP requests answered, by method, route template and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers,
  });
  const duration = new Histogram({
    name: 'svc_http_request_duration_seconds',
    help: 'Time from request to the end of the answer, by method and route template (event streams last as long as they are open).',
    labelNames: ['method', 'route'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  });
  const refused = new Counter({
    name: 'svc_rate_limited_total',
    help: 'Requests refused with 429 rate_limited, by route template.',
    labelNames: ['route'] as const,
    registers,
  });
  new Gauge({
    name: 'svc_event_streams_open',
    help: 'Event streams open on this instance.',
    registers,
    collect() {
      this.set(streams.size);
    },
  });

  // Read from the store once per scrape (render), all in one query of counts.
  const stored = {
    accounts: new Gauge({ name: 'svc_accounts', help: 'Accounts (deleted ones not counted).', registers }),
    devices: new Gauge({ name: 'svc_devices', help: 'Devices of all accounts.', registers }),
    rooms: new Gauge({ name: 'svc_rooms', help: 'Rooms.', registers }),
    queuedEnvelopes: new Gauge({ name: 'svc_queued_envelopes', help: 'Queue entries waiting for an ack (one per envelope and device).', registers }),
    pushSubscriptions: new Gauge({ name: 'svc_push_subscriptions', help: 'Devices with a push subscription.', registers }),
    attachments: new Gauge({ name: 'svc_attachments', help: 'Attachments stored, finished or still uploading.', registers }),
    attachmentBytes: new Gauge({ name: 'svc_attachment_bytes', help: 'Bytes of ciphertext the stored attachments hold.', registers }),
  };
  const uploaded = new Counter({
    name: 'svc_attachment_uploaded_bytes_total',
    help: 'Bytes of attachment parts this instance has stored.',
    registers,
  });
  const storeUp = new Gauge({ name: 'svc_store_up', help: '1 when the store answered the last scrape, else 0.', registers });

  const pusher = deps.pusher;
  if (pusher instanceof WebPusher) {
    new Counter({
      name: 'svc_push_notifications_total',
      help: 'Web Push notifications by result: sent (2xx), failed (refused, gone or unreachable), dropped (queue full or shutdown).',
      labelNames: ['result'] as const,
      registers,
      collect() {
        // The pusher keeps its own running totals; the counter mirrors them.
        this.reset();
        this.inc({ result: 'sent' }, pusher.sent);
        this.inc({ result: 'failed' }, pusher.failed);
        this.inc({ result: 'dropped' }, pusher.dropped);
      },
    });
  }

  if (deps.bus instanceof RedisBus) {
    const lag = new Histogram({
      name: 'svc_bus_lag_seconds',
      help: 'Time from publishing on the Redis bus (on any instance) to arrival here; instances must share a synchronised clock.',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    deps.bus.onLag = (ms) => lag.observe(Math.max(0, ms) / 1000);
  }

  fastify.addHook('onResponse', async (req, reply) => {
    const method = METHODS.has(req.method) ? req.method : 'other';
    const route = req.routeOptions.url ?? UNMATCHED;
    requests.inc({ method, route, status: String(reply.statusCode) });
    duration.observe({ method, route }, reply.elapsedTime / 1000);
    if (reply.statusCode === 429) refused.inc({ route });
    if (req.uploadedBytes > 0) uploaded.inc(req.uploadedBytes);
  });

  return {
    registry,
    async render() {
      try {
        const s = await deps.store.stats();
        for (const [k, g] of Object.entries(stored)) g.set(s[k as keyof typeof stored]);
        storeUp.set(1);
      } catch (err) {
        deps.log.error({ err }, 'metrics: store stats failed');
        storeUp.set(0);
      }
      return registry.metrics();
    },
  };
}

const urls = new WeakMap<FastifyInstance, string>();

/**
 * Called once by createApp: with METRICS_PORT set, counts requests and serves the metrics on
 * 127.0.0.1:METRICS_PORT until the app closes. Without it, does nothing.
 */
export async function registerMetrics(fastify: FastifyInstance, deps: Deps, streams: LocalStreams): Promise<void> {
  const port = deps.config.metricsPort;
  if (port === null) return;
  const metrics = createMetrics(fastify, deps, streams);
  const server = await startMetricsServer(metrics, port, deps.log);
  urls.set(fastify, server.url);
  fastify.addHook('onClose', async () => server.close());
}

/** Where the metrics of this app are served (`http://127.0.0.1:PORT/metrics`), or null when off. */
export function metricsUrl(fastify: FastifyInstance): string | null {
  return urls.get(fastify) ?? null;
}
