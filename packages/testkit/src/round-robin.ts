/**
 * A load balancer for tests: each incoming request goes to the next instance in turn, headers
 * and bodies passed through unchanged (X-Real-IP too: like the real deployment, the instances
 * see a loopback peer), responses streamed back, event streams included. No sticky sessions.
 */
import { createServer, request, Agent, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RoundRobin {
  url: string;
  /** How many requests each instance received. */
  counts: number[];
  close(): Promise<void>;
}

export async function startRoundRobin(targets: string[]): Promise<RoundRobin> {
  const agent = new Agent({ keepAlive: true });
  const counts = targets.map(() => 0);
  let next = 0;
  const server: Server = createServer((req, res) => {
    const i = next;
    next = (next + 1) % targets.length;
    counts[i]!++;
    const target = new URL(req.url ?? '/', targets[i]);
    const upstream = request(target, { method: req.method, headers: req.headers, agent, setHost: false }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.rawHeaders);
      res.flushHeaders();
      up.pipe(res);
      res.on('close', () => up.destroy());
    });
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502).end();
      else res.destroy();
    });
    req.pipe(upstream);
    req.on('error', () => upstream.destroy());
    res.on('close', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    counts,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
    },
  };
}
