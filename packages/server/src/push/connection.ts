/**
 * The one connection a push takes: the host is resolved once, every resolved address must be
 * public (unless private targets are allowed for tests), the socket goes to the checked address
 * with the host name kept for TLS (SNI and certificate check), no redirect is followed, and the
 * whole exchange gives up after a deadline.
 */
import { request } from 'node:https';
import { lookup } from 'node:dns/promises';
import type { LookupAddress } from 'node:dns';
import { isPublicAddress, literalIp } from './address.js';

export type Resolver = (host: string) => Promise<LookupAddress[]>;

export const systemResolver: Resolver = (host) => lookup(host, { all: true, verbatim: true });

export class PushRefused extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'PushRefused';
  }
}

export interface PushRequest {
  endpoint: string;
  method: string;
  headers: Record<string, string | number>;
  body: Buffer | null;
}

export interface ConnectionOptions {
  resolve: Resolver;
  allowPrivate: boolean;
  timeoutMs: number;
}

/** Picks the address to connect to, or refuses. A name with any non-public address is refused whole. */
export async function checkedAddress(hostname: string, o: Pick<ConnectionOptions, 'resolve' | 'allowPrivate'>): Promise<LookupAddress> {
  const literal = literalIp(hostname);
  const addresses = literal ? [{ address: literal, family: literal.includes(':') ? 6 : 4 }] : await o.resolve(hostname);
  if (addresses.length === 0) throw new PushRefused('host has no address');
  if (!o.allowPrivate && addresses.some((a) => !isPublicAddress(a.address))) throw new PushRefused('non-public address');
  return addresses[0]!;
}

/** Sends one push request; resolves with the push service's status code. Never follows a redirect. */
export async function sendPushRequest(req: PushRequest, o: ConnectionOptions): Promise<number> {
  const url = new URL(req.endpoint);
  if (url.protocol !== 'https:') throw new PushRefused('endpoint is not https');
  const deadline = AbortSignal.timeout(o.timeoutMs);
  const target = await Promise.race([
    checkedAddress(url.hostname, o),
    new Promise<never>((_, reject) => deadline.addEventListener('abort', () => reject(new PushRefused('timeout')), { once: true })),
  ]);
  return new Promise<number>((resolve, reject) => {
    const r = request(
      url,
      {
        method: req.method,
        headers: req.headers,
        signal: deadline,
        // The connection goes to the address checked above: no second lookup can swap it.
        lookup: (_host, opts, cb) => {
          if ((opts as { all?: boolean }).all) (cb as unknown as (e: null, a: LookupAddress[]) => void)(null, [target]);
          else cb(null, target.address, target.family);
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      },
    );
    r.on('error', (err) => reject(deadline.aborted ? new PushRefused('timeout') : err));
    r.end(req.body ?? undefined);
  });
}
