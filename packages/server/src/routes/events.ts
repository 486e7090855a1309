/**
 * The event stream route. Refusals are ordinary JSON errors (docs/API.md §2.6); once the checks
 * pass, the response is taken over from the framework and becomes a server-sent event stream.
 */
import { ApiError, invalid, isDeviceId } from '@svc/protocol';
import type { ServerResponse } from 'node:http';
import { requireOwnDevice } from '../domain/devices.js';
import { closeStream, openStream } from '../domain/streams.js';
import { JSON_CONTENT_TYPE, SECURITY_HEADERS, STREAM_HEADERS } from '../http/headers.js';
import { responseSink } from '../http/sse.js';
import { callerOf, query, type RouteHandlers } from './context.js';
import { ok } from '../http/reply.js';

/**
 * A stream that could not open (its store or bus is unreachable) before anything was written
 * answers an ordinary 500 `internal`, as any other route would, so the client retries later.
 */
function refuseStream(res: ServerResponse): void {
  for (const k of Object.keys(STREAM_HEADERS)) res.removeHeader(k);
  res.writeHead(500, { ...SECURITY_HEADERS, 'content-type': JSON_CONTENT_TYPE, 'cache-control': 'no-store', connection: 'close' });
  res.end(JSON.stringify(new ApiError('internal').toBody()));
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

    const started = performance.now();
    ctx.reply.hijack();
    const res = ctx.reply.raw;
    // The 200 and its headers leave with the first frame (a replayed `msg` or `ready`), so that a
    // failure before it can still be answered as a 500.
    res.statusCode = 200;
    for (const [k, v] of Object.entries({ ...STREAM_HEADERS, connection: 'close' })) res.setHeader(k, v);
    let conn;
    try {
      conn = await openStream(ctx.deps, caller, device, responseSink(res));
    } catch (err) {
      ctx.deps.log.error({ err }, 'event stream failed to open');
      const answered = !res.headersSent;
      if (answered) refuseStream(res);
      else res.destroy();
      ctx.deps.log.info(
        { method: 'GET', status: answered ? 500 : 200, ms: Math.round(performance.now() - started), route: '/api/events' },
        'request',
      );
      return undefined;
    }
    const finish = () => {
      closeStream(ctx.deps, conn);
      // A taken-over response skips the framework's response hook, so the request log line is written here.
      ctx.deps.log.info({ method: 'GET', status: 200, ms: Math.round(performance.now() - started), route: '/api/events' }, 'request');
    };
    if (res.destroyed) finish();
    else res.once('close', finish);
    return undefined;
  },
};
