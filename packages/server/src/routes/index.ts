/**
 * Route registration: every route of the protocol's table (API) bound to its handler, with the
 * session check and the shared write limit attached as the table says, and the route's body check
 * offered to its handler. The handler map is typed by the table, so a route without a handler does
 * not compile; the start-time checks below also catch a table and a map that drift at run time.
 */
import { ApiError, API, ROUTES, type RouteName } from '@svc/protocol';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../domain/deps.js';
import { whenCommitted, whenDurable } from '../domain/durability.js';
import { parseJsonObject } from '../http/body.js';
import { clientIp, limitAddress } from '../http/client-ip.js';
import { TOUCH_EVERY_MS, authenticate, rememberedCaller } from '../http/session.js';
import { RememberedSessions } from '../http/remembered-sessions.js';
import { accountRoutes } from './account.js';
import { attachmentRoutes } from './attachments.js';
import { contactRoutes } from './contacts.js';
import { deviceRoutes } from './devices.js';
import { eventRoutes } from './events.js';
import { messageRoutes } from './messages.js';
import { roomRoutes } from './rooms.js';
import type { RouteContext, RouteHandler, RouteHandlers } from './context.js';
import type { Caller } from '../domain/deps.js';

const HANDLERS: RouteHandlers = {
  ...accountRoutes,
  ...deviceRoutes,
  ...contactRoutes,
  ...roomRoutes,
  ...messageRoutes,
  ...eventRoutes,
  ...attachmentRoutes,
};

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller | null;
    /** Bytes of an attachment part this request stored (for the metrics). */
    uploadedBytes: number;
  }
}

export function registerRoutes(app: FastifyInstance, deps: Deps): void {
  for (const k of Object.keys(HANDLERS)) if (!(k in API)) throw new Error(`handler without a route in the protocol: ${k}`);
  app.decorateRequest('caller', null);
  app.decorateRequest('uploadedBytes', 0);
  // Sessions checked lately, for sends that confirm their caller themselves (remembered-sessions.ts).
  const remembered = deps.store.confirmsCallerInSend ? new RememberedSessions(TOUCH_EVERY_MS) : undefined;

  for (const spec of ROUTES) {
    // An optional part the operator turned off: its paths answer 404 `not_found` like any unknown one.
    if (spec.feature === 'attachments' && deps.config.attachments === null) continue;
    const handler = HANDLERS[spec.name] as RouteHandler<RouteName> | undefined;
    if (!handler) throw new Error(`route without a handler: ${spec.name} (${spec.method} ${spec.path})`);
    const check = spec.body;
    // A GET (and the HEAD made from it) answers without waiting for the disk: the only GET that
    // writes is the event stream's, which records the connection time and answers by streaming.
    // Other routes answer once what they wrote is durable, and with a 500 if it was lost; their
    // events may already be out.
    const writes = spec.method !== 'GET';
    // An attachment's part is answered once committed, before the disk has it; its finish waits
    // for the disk, and so for every part it covers (docs/DESIGN.md).
    const barrier = spec.name === 'uploadAttachmentPart' ? whenCommitted : whenDurable;
    const onRequest = [];
    // A send and an attachment's part confirm a remembered session in their own write: a part is
    // the request an upload makes most, and the lookup was a third of its round trips.
    const provisional = remembered !== undefined && (spec.name === 'sendMessage' || spec.name === 'uploadAttachmentPart');
    if (spec.auth) {
      onRequest.push(async (req: FastifyRequest, reply: FastifyReply) => {
        req.caller =
          (provisional ? rememberedCaller(deps, remembered, req.headers.cookie, req.headers['x-device']) : null) ??
          (await authenticate(deps, req.headers.cookie, req.headers['x-device'], remembered, reply.raw));
      });
    }
    if (check === null && writes) {
      // A route that takes no body ignores whatever is sent (docs/API.md), its Content-Type
      // included: the framework would refuse a malformed one before the handler (415), which
      // the table does not list for such a route. The body's framing is still checked.
      onRequest.push(async (req: FastifyRequest) => {
        delete req.headers['content-type'];
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
        // The client address, as the per-address limits count it, is parsed only by the few routes that limit by it.
        const ctx: RouteContext<RouteName> = {
          deps,
          req,
          reply,
          caller: req.caller,
          get ip() {
            return limitAddress(clientIp(req.socket.remoteAddress, req.headers['x-real-ip']));
          },
          body: () => {
            if (check === null) throw new Error(`${spec.name} takes no body`);
            return check(parseJsonObject(req)) as never;
          },
        };
        let result: Awaited<ReturnType<typeof handler>>;
        try {
          result = writes ? await barrier(deps.store, () => handler(ctx)) : await handler(ctx);
        } catch (err) {
          if (req.caller?.provisional && remembered) await beforeRefusal(deps, req, reply, req.caller, remembered, err);
          throw err;
        }
        if (result === undefined) return reply;
        if (result.setCookie) reply.header('set-cookie', result.setCookie);
        reply.code(result.status);
        return result.body === undefined ? reply.send() : reply.send(result.body);
      },
    });
  }
}

/**
 * A request on a remembered session is refused only once its session is known to live: the
 * session check's 401 comes before every other refusal (docs/API.md), so a refusal met
 * before the send confirmed the session runs the full check first, and throws its 401 instead.
 * A failure (5xx) is answered as it is: the full check would add its own wait to a database
 * that is failing, for the same answer.
 */
async function beforeRefusal(
  deps: Deps,
  req: FastifyRequest,
  reply: FastifyReply,
  caller: Caller,
  remembered: RememberedSessions,
  err: unknown,
): Promise<void> {
  if (!(err instanceof ApiError) || err.status >= 500) return;
  if (err.code === 'unauthenticated') {
    remembered.forget(caller.sessionId);
    return;
  }
  try {
    await authenticate(deps, req.headers.cookie, req.headers['x-device'], remembered, reply.raw);
  } catch (e) {
    remembered.forget(caller.sessionId);
    throw e;
  }
}
