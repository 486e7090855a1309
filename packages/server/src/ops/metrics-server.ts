/**
 * The metrics listener: a bare HTTP server on 127.0.0.1 that answers `GET /metrics` and nothing
 * else. It is apart from the service's Fastify instance on purpose: the public origin never
 * serves metrics, and the reverse proxy has no route to this port.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';

/** What the endpoint serves: the metrics' text and its content type. */
export interface MetricsSource {
  render(): Promise<string>;
  readonly registry: { readonly contentType: string };
}

export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

export async function startMetricsServer(metrics: MetricsSource, port: number, log: FastifyBaseLogger): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if ((req.method !== 'GET' && req.method !== 'HEAD') || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
      return;
    }
    metrics.render().then(
      (text) => {
        res.writeHead(200, { 'content-type': metrics.registry.contentType, 'cache-control': 'no-store' });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      (err: unknown) => {
        log.error({ err }, 'metrics: render failed');
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('error\n');
      },
    );
  });
  // A scraper that keeps its connection open must not hold up the service's shutdown.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // Loopback only, whatever HOST says: metrics are for the machine's own scraper.
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${bound}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
