/** What every route handler receives, and the shape of the route table. */
import { ApiError } from '@svc/protocol';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Caller, Deps } from '../domain/deps.js';
import type { RouteResult } from '../http/reply.js';

export interface RouteContext {
  deps: Deps;
  req: FastifyRequest;
  reply: FastifyReply;
  /** Set on routes that need a session (the session check ran before the handler). */
  caller: Caller | null;
  /** Client address for limits (X-Real-IP only behind a loopback proxy). */
  ip: string;
}

/** A handler returns its result, or undefined when it answered on its own (the event stream). */
export type RouteHandler = (ctx: RouteContext) => Promise<RouteResult | undefined>;

/** Handlers keyed by "METHOD /path" exactly as the protocol's ROUTES list spells them. */
export type RouteHandlers = Record<string, RouteHandler>;

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
