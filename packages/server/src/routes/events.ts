/**
 * The event stream route. Refusals are ordinary JSON errors (docs/API.md); once the checks
 * pass, the response is taken over from the framework and becomes a server-sent event stream.
 */
import { ApiError, invalid, isDeviceId } from '@svc/protocol';
import type { ServerResponse } from 'node:http';
import { requireOwnDevice } from '../domain/devices.js';
import { closeStream, openStream } from '../domain/streams.js';
import { JSON_CONTENT_TYPE, SECURITY_HEADERS, STREAM_HEADERS } from '../http/headers.js';
import { ResponseSink } from '../http/sse.js';
import type { StreamConn } from '../bus/streams.js';
import type { Deps } from '../domain/deps.js';
import { callerOf, query, type RouteHandlers } from './context.js';
import { ok } from '../http/reply.js';

/**
 * A stream that could not open before anything was written answers an ordinary JSON error: the
 * refusal of the checks made again once it was attached (domain/streams.ts), or a 500 `internal`
 * when its store or bus is unreachable, as any other route would, so the client retries later.
 */
function refuseStream(res: ServerResponse, err: ApiError): void {
  res.writeHead(err.status, { ...SECURITY_HEADERS, 'content-type': JSON_CONTENT_TYPE, 'cache-control': 'no-store', connection: 'close' });
  res.end(JSON.stringify(err.toBody()));
}

/** The request log line of a stream: a taken-over response skips the framework's response hook. */
function logStream(deps: Deps, status: number, started: number): void {
  deps.log.info({ method: 'GET', status, ms: Math.round(performance.now() - started), route: '/api/events' }, 'request');
}

/**
 * Serves an open stream until its client goes. Apart from the route's context on purpose: what
 * the close handler holds lives as long as the stream, and the context (the framework's request
 * and reply with it) is not needed after the stream opened.
 */
function untilClosed(deps: Deps, res: ServerResponse, conn: StreamConn, started: number): void {
  const finish = () => {
    closeStream(deps, conn);
    logStream(deps, 200, started);
  };
  if (res.destroyed) finish();
  else res.once('close', finish);
}

export const eventRoutes: Pick<RouteHandlers, 'openEvents'> = {
  openEvents: async (ctx) => {
    const caller = callerOf(ctx);
    const device = query(ctx, 'device');
    if (!isDeviceId(device)) throw invalid('device');
    await requireOwnDevice(ctx.deps, caller, device);

    // HEAD gets the stream's headers and no stream: it must not replace the device's open stream.
    if (ctx.req.method === 'HEAD') {
      for (const [k, v] of Object.entries(STREAM_HEADERS)) ctx.reply.header(k, v);
      return ok(undefined);
    }

    const { deps } = ctx;
    const started = performance.now();
    ctx.reply.hijack();
    const res = ctx.reply.raw;
    let conn: StreamConn;
    try {
      conn = await openStream(deps, caller, device, new ResponseSink(res));
    } catch (err) {
      const refusal = err instanceof ApiError && err.status < 500 ? err : null;
      if (!refusal) deps.log.error({ err }, 'event stream failed to open');
      const answer = refusal ?? new ApiError('internal');
      const answered = !res.headersSent;
      if (answered) refuseStream(res, answer);
      else res.destroy();
      logStream(deps, answered ? answer.status : 200, started);
      return undefined;
    }
    untilClosed(deps, res, conn, started);
    return undefined;
  },
};
