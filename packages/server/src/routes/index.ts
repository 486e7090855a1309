/**
 * The route table: every route of the protocol's ROUTES list bound to its handler, with the
 * session check and the shared write limit attached as the list says. A route missing a
 * handler, or a handler without a route, stops the start.
 */
import { ApiError, ROUTES, type RouteSpec } from '@svc/protocol';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../domain/deps.js';
import { clientIp } from '../http/client-ip.js';
import { authenticate } from '../http/session.js';
import { accountRoutes } from './account.js';
import { contactRoutes } from './contacts.js';
import { deviceRoutes } from './devices.js';
import { eventRoutes } from './events.js';
import { messageRoutes } from './messages.js';
import { roomRoutes } from './rooms.js';
import type { RouteHandlers } from './context.js';
import type { Caller } from '../domain/deps.js';

const HANDLERS: RouteHandlers = { ...accountRoutes, ...deviceRoutes, ...contactRoutes, ...roomRoutes, ...messageRoutes, ...eventRoutes };

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller | null;
  }
}

export const routeKey = (r: Pick<RouteSpec, 'method' | 'path'>): string => `${r.method} ${r.path}`;

export function registerRoutes(app: FastifyInstance, deps: Deps): void {
  const keys = new Set(ROUTES.map(routeKey));
  for (const k of Object.keys(HANDLERS)) if (!keys.has(k)) throw new Error(`handler without a route in the protocol: ${k}`);
  app.decorateRequest('caller', null);

  for (const spec of ROUTES) {
    const handler = HANDLERS[routeKey(spec)];
    if (!handler) throw new Error(`route without a handler: ${routeKey(spec)}`);
    // A GET (and the HEAD made from it) answers without waiting for the disk: the only GET that
    // writes is the event stream's, which records the connection time and answers by streaming.
    const writes = spec.method !== 'GET';
    const onRequest = [];
    if (spec.auth) {
      onRequest.push(async (req: FastifyRequest) => {
        req.caller = await authenticate(deps, req.headers.cookie, req.headers['x-device']);
      });
    }
    if (spec.write) {
      onRequest.push(async (req: FastifyRequest) => {
        const wait = await deps.limiter.hit(`write:${req.caller!.nick}`, deps.config.rates.writesPerMin, 60_000);
        if (wait > 0) throw new ApiError('rate_limited', { retryAfter: wait });
      });
    }
    app.route({
      method: spec.method,
      url: spec.path,
      onRequest,
      handler: async (req: FastifyRequest, reply: FastifyReply) => {
        const mark = writes ? deps.store.lossMark() : 0;
        // The client address is parsed only by the few routes that limit by it.
        const result = await handler({
          deps,
          req,
          reply,
          caller: req.caller,
          get ip() {
            return clientIp(req.socket.remoteAddress, req.headers['x-real-ip']);
          },
        });
        if (result === undefined) return reply;
        // What this request wrote may be settled but not yet on disk (its events may already be
        // out): the answer waits until it is durable, and becomes a 500 if it was lost.
        if (writes) await deps.store.durable(mark);
        if (result.setCookie) reply.header('set-cookie', result.setCookie);
        reply.code(result.status);
        return result.body === undefined ? reply.send() : reply.send(result.body);
      },
    });
  }
}
