/**
 * The one place that turns a failure into an HTTP answer `{error, message, field?}`. ApiErrors
 * map through the protocol's catalog; framework errors map to the nearest spec code; anything
 * else is a 500 `internal` whose cause goes to the log with its stack and no request data, nor
 * any value the error carries (log-error.ts).
 */
import { ApiError, type ErrorCode } from '@svc/protocol';
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import { JSON_CONTENT_TYPE, SECURITY_HEADERS } from './headers.js';
import { errorForLog } from '../log-error.js';

/** Fastify's own error codes that can reach us, and the spec code each means. */
const FRAMEWORK_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'too_large',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'bad_json',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'bad_json',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'bad_json',
  FST_ERR_CTP_INVALID_JSON_BODY: 'bad_json',
  FST_ERR_BAD_URL: 'not_found',
  FST_ERR_MAX_PARAM_LENGTH: 'not_found',
  FST_ERR_ASYNC_CONSTRAINT: 'not_found',
};

/**
 * `clientGone`: the client's connection is closed. A reset or an abort then comes from the body
 * stream (a client that went away mid-body): the client's fault, and nobody reads the answer. While
 * the client is still connected, a reset comes from one of our own connections, PostgreSQL's or
 * Redis's (pg reports a reset socket as ECONNRESET too): internal, so that the client retries
 * instead of taking its request for malformed and giving the message up.
 */
export function toApiError(err: unknown, clientGone = true): ApiError | null {
  if (err instanceof ApiError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code in FRAMEWORK_CODES) return new ApiError(FRAMEWORK_CODES[code]!);
  if (clientGone && (code === 'ECONNRESET' || (err as { type?: unknown } | null)?.type === 'request.aborted')) return new ApiError('bad_json');
  return null;
}

export function sendError(reply: FastifyReply, err: unknown, log: FastifyBaseLogger): FastifyReply {
  let api = toApiError(err, reply.raw.socket?.destroyed ?? true);
  if (!api) {
    // Message, code and stack only: a PostgreSQL error's detail holds row values such as nicks.
    log.error({ err: errorForLog(err) }, 'internal error');
    api = new ApiError('internal');
  }
  if (api.code === 'rate_limited') reply.header('retry-after', String(Math.max(1, api.retryAfter ?? 1)));
  return reply.code(api.status).header('content-type', JSON_CONTENT_TYPE).header('cache-control', 'no-store').send(JSON.stringify(api.toBody()));
}

/**
 * Errors the router meets before any route or hook runs (a path that is not valid percent-encoding,
 * a parameter over the router's length bound): the framework would answer them in its own form and
 * without the headers every response carries, so they are answered here like any other error.
 */
export function frameworkError(err: unknown, _req: unknown, reply: FastifyReply): void {
  for (const [k, v] of Object.entries(SECURITY_HEADERS)) reply.header(k, v);
  sendError(reply, err, reply.log);
}
