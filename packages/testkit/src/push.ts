/**
 * A real HTTPS push service on loopback for the tests: it records every request, answers with a
 * status chosen per path, decrypts payloads (RFC 8291, aes128gcm) with the subscription's private
 * key and auth secret, and verifies the VAPID JWT (RFC 8292: ES256 signature, aud, exp).
 */
import { createServer, type Server } from 'node:https';
import { createECDH, createPublicKey, randomBytes, verify, type ECDH } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeB64url } from '@svc/protocol';
// http_ece ships without types; it is web-push's own RFC 8188 implementation.
// eslint-disable-next-line @typescript-eslint/ban-ts-comment
// @ts-ignore
import ece from 'http_ece';

export interface PushRecord {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export interface Subscription {
  endpoint: string;
  keys: { p256dh: string; auth: string };
  ecdh: ECDH;
  authSecret: Buffer;
}

/**
 * Listens on a free port of loopback and answers its port. Subscriptions name the host
 * `localhost` (a literal loopback IP is refused when subscribing), which may resolve to 127.0.0.1
 * or ::1: both are listened on where IPv6 exists.
 */
export async function listenOnLocalhost(server: Server): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => {
      if (e.code !== 'EADDRNOTAVAIL' && e.code !== 'EAFNOSUPPORT') return reject(e);
      server.listen(0, '127.0.0.1', resolve);
    });
    server.listen({ port: 0, host: '::', ipv6Only: false }, resolve);
  });
  const addr = server.address();
  return typeof addr === 'object' && addr ? addr.port : 0;
}

export class PushService {
  readonly received: PushRecord[] = [];
  /** Status to answer per path (default 201). */
  readonly statusFor = new Map<string, number>();
  /** Paths whose requests are never answered (until the service closes). */
  readonly hang = new Set<string>();
  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(): Promise<PushService> {
    const dir = process.env.TEST_TLS_DIR;
    if (!dir) throw new Error('TEST_TLS_DIR is not set: run the tests through `npm test`');
    let svc: PushService | null = null;
    const server = createServer({ key: readFileSync(join(dir, 'server.key')), cert: readFileSync(join(dir, 'server.pem')) }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const path = req.url ?? '';
        svc!.received.push({ path, headers: req.headers, body: Buffer.concat(chunks) });
        if (svc!.hang.has(path)) return;
        const status = svc!.statusFor.get(path) ?? 201;
        if (status >= 300 && status < 400) res.setHeader('location', `https://127.0.0.1:${svc!.port}/redirected`);
        res.writeHead(status).end();
      });
    });
    svc = new PushService(server, await listenOnLocalhost(server));
    return svc;
  }

  /** A browser-like subscription for `path` on this service (host `localhost`, or `push.test`). */
  subscription(path: string, host = 'localhost'): Subscription {
    const ecdh = createECDH('prime256v1');
    ecdh.generateKeys();
    const authSecret = randomBytes(16);
    return {
      endpoint: `https://${host}:${this.port}${path}`,
      keys: { p256dh: encodeB64url(ecdh.getPublicKey()), auth: encodeB64url(authSecret) },
      ecdh,
      authSecret,
    };
  }

  forPath(path: string): PushRecord[] {
    return this.received.filter((r) => r.path === path);
  }

  /**
   * Waits until `pred` holds, up to `timeoutMs`, looking every 20 ms. The predicate may be about
   * something other than a push (a log line of a push that was refused never reaches this
   * service), so the wait ends when it holds, not at the deadline.
   */
  async waitFor(pred: () => boolean, timeoutMs = 10_000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!pred()) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      await new Promise((r) => setTimeout(r, Math.min(left, 20)));
    }
    return true;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }
}

export function decryptPayload(rec: PushRecord, sub: Subscription): unknown {
  const plain = ece.decrypt(rec.body, { version: 'aes128gcm', privateKey: sub.ecdh, authSecret: sub.authSecret }) as Buffer;
  return JSON.parse(plain.toString('utf8'));
}

/** Verifies `Authorization: vapid t=<jwt>, k=<key>` and returns the JWT claims. */
export function verifyVapid(rec: PushRecord, expectedPublicKey: string): { aud: string; exp: number; sub: string } {
  const auth = String(rec.headers.authorization ?? '');
  const m = /^vapid t=([^,]+), k=(.+)$/.exec(auth);
  if (!m) throw new Error(`not a VAPID authorization: ${auth.slice(0, 20)}`);
  const [jwt, k] = [m[1]!, m[2]!];
  if (k !== expectedPublicKey) throw new Error('VAPID key differs from /api/config');
  const [h, p, s] = jwt.split('.') as [string, string, string];
  const header = JSON.parse(Buffer.from(h, 'base64url').toString()) as { alg: string };
  if (header.alg !== 'ES256') throw new Error('alg is not ES256');
  const raw = Buffer.from(k, 'base64url');
  const key = createPublicKey({
    key: { kty: 'EC', crv: 'P-256', x: raw.subarray(1, 33).toString('base64url'), y: raw.subarray(33).toString('base64url') },
    format: 'jwk',
  });
  const ok = verify('sha256', Buffer.from(`${h}.${p}`), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(s, 'base64url'));
  if (!ok) throw new Error('VAPID signature does not verify');
  return JSON.parse(Buffer.from(p, 'base64url').toString()) as { aud: string; exp: number; sub: string };
}
