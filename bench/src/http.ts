/**
 * The harness's HTTP client. Setup requests (register, devices, rooms, acks) go through
 * `Endpoint.call`: node:http over a keep-alive agent, the session cookie per account and the
 * Origin header the service requires. The measured send loops do not: they use `raw`, a pool of
 * plain keep-alive sockets of the same size (raw-http.ts), because a node:http request per
 * message cost the generator more CPU than the ceiling spent answering it.
 */
import { Agent, request } from 'node:http';
import { RawPool } from './raw-http.js';

export interface Res {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

/** One server under test as the client sees it. */
export class Endpoint {
  readonly origin: string;
  agent: Agent;
  /** Raw keep-alive sockets for the measured loops, as many as the agent may hold. */
  raw: RawPool;

  constructor(
    readonly port: number,
    maxSockets = 64,
  ) {
    this.origin = `http://127.0.0.1:${port}`;
    this.agent = new Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
    this.raw = new RawPool(port, maxSockets);
  }

  /** Replaces the agent and the raw pool with ones sized for `maxSockets` concurrent requests. */
  resize(maxSockets: number): void {
    this.agent.destroy();
    this.agent = new Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
    this.raw.close();
    this.raw = new RawPool(this.port, maxSockets);
  }

  close(): void {
    this.agent.destroy();
    this.raw.close();
  }

  /** One request; rejects only on a network error (every status resolves). */
  call(method: string, path: string, o: { body?: unknown; cookie?: string; device?: string; timeoutMs?: number } = {}): Promise<Res> {
    const payload = o.body === undefined ? undefined : JSON.stringify(o.body);
    const headers: Record<string, string | number> = { origin: this.origin };
    if (payload !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = Buffer.byteLength(payload);
    }
    if (o.cookie !== undefined) headers.cookie = o.cookie;
    if (o.device !== undefined) headers['x-device'] = o.device;
    return new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: this.port, method, path, headers, agent: this.agent, timeout: o.timeoutMs ?? 30_000 }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timed out`)));
      req.end(payload);
    });
  }
}

/** The `svc_session=…` pair from a Set-Cookie answer. */
export function sessionCookie(r: Res): string {
  const set = r.headers['set-cookie'];
  const line = (Array.isArray(set) ? set : [set ?? '']).find((l) => l.startsWith('svc_session='));
  if (!line) throw new Error(`no session cookie in answer ${r.status} ${r.body}`);
  return line.split(';')[0]!;
}

/** Throws unless the answer has one of the expected statuses. */
export function expect(r: Res, what: string, ...statuses: number[]): Res {
  if (!statuses.includes(r.status)) throw new Error(`${what}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
  return r;
}

/** Runs `fn` over `items` with at most `limit` calls in flight. */
export async function pool<T>(items: T[], limit: number, fn: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
