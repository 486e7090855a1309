/** What every route handler receives, and the shape of the route table. */
import { ApiError, type RequestOf, type ResponseOf, type RouteName } from '@svc/protocol';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Caller, Deps } from '../domain/deps.js';
import type { RouteResult } from '../http/reply.js';

export interface RouteContext<N extends RouteName = RouteName> {
  deps: Deps;
  req: FastifyRequest;
  reply: FastifyReply;
  /** Set on routes that need a session (the session check ran before the handler). */
  caller: Caller | null;
  /** Client address for limits (X-Real-IP only behind a loopback proxy; an IPv6 one as its /64). */
  ip: string;
  /** Parses the body as a JSON object and checks it with the route table's check of this route. */
  body(): RequestOf<N>;
}

/** A handler returns its result, or undefined when it answered on its own (the event stream). */
export type RouteHandler<N extends RouteName = RouteName> = (ctx: RouteContext<N>) => Promise<RouteResult<ResponseOf<N>> | undefined>;

/** Handlers keyed by the names of the protocol's route table (API). */
export type RouteHandlers = { [N in RouteName]: RouteHandler<N> };

export function callerOf(ctx: RouteContext): Caller {
  if (!ctx.caller) throw new ApiError('unauthenticated');
  return ctx.caller;
}

export function param(ctx: RouteContext, name: string): string {
  return (ctx.req.params as Record<string, string>)[name] ?? '';
}

export function query(ctx: RouteContext, name: string): string | undefined {
  const v = (ctx.req.query as Record<string, unknown>)[name];
  return typeof v === 'string' ? v : undefined;
}
