/**
 * The origin check (docs/API.md), the first step on every route: a foreign Origin, a
 * cross-site or same-site fetch, or a non-GET/HEAD without Origin is refused with bad_origin.
 * GET and HEAD without Origin pass, since browsers omit it on same-origin navigations.
 */
import { ApiError } from '@svc/protocol';
import type { IncomingHttpHeaders } from 'node:http';

export function checkOrigin(expected: string, method: string, headers: IncomingHttpHeaders): void {
  const origin = headers.origin;
  const site = headers['sec-fetch-site'];
  if (origin !== undefined && origin !== expected) throw new ApiError('bad_origin');
  if (site === 'cross-site' || site === 'same-site') throw new ApiError('bad_origin');
  if (origin === undefined && method !== 'GET' && method !== 'HEAD') throw new ApiError('bad_origin');
}
