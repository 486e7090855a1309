/** Account and session routes (docs/API.md). */
import { ApiError, ATTACHMENT, checkLogin, invalid, isNick, isPlainObject, type ConfigResponse } from '@svc/protocol';
import * as accounts from '../domain/accounts.js';
import { parseJson } from '../http/body.js';
import { clearedSessionCookie, sessionCookie } from '../http/cookies.js';
import { created, noContent, ok } from '../http/reply.js';
import { callerOf, param, query, type RouteContext, type RouteHandlers } from './context.js';

async function limit(ctx: RouteContext, key: string, max: number, windowMs: number): Promise<void> {
  const wait = await ctx.deps.limiter.hit(key, max, windowMs);
  if (wait > 0) throw new ApiError('rate_limited', { retryAfter: wait });
}

const LOGIN_WINDOW_MS = 600_000;

type AccountRoutes = Pick<RouteHandlers, 'config' | 'kdf' | 'register' | 'login' | 'me' | 'deleteMe' | 'logout' | 'changePassword' | 'user'>;

export const accountRoutes: AccountRoutes = {
  config: async ({ deps }) => {
    const body: ConfigResponse = {
      revision: deps.config.build.revision,
      commitTime: deps.config.build.commitTime,
      registration: deps.config.registration,
      vapidPublicKey: deps.secrets.vapidPublicKey,
      attachments: deps.config.attachments && { partBytes: ATTACHMENT.partBytes, ...deps.config.attachments },
    };
    return ok(body);
  },

  kdf: async (ctx) => {
    const nick = query(ctx, 'nick');
    if (!isNick(nick)) throw invalid('nick');
    return ok(await accounts.getKdf(ctx.deps, nick));
  },

  register: async (ctx) => {
    const { deps } = ctx;
    const ip = ctx.ip;
    await limit(ctx, `register:${ip}`, deps.config.rates.registerPerHour, 3_600_000);
    const r = await accounts.register(deps, ctx.body());
    await deps.known.remember(r.nick, ip);
    return created({ nick: r.nick }, sessionCookie(r.token, deps.config.secureCookies));
  },

  login: async (ctx) => {
    const { deps } = ctx;
    const ip = ctx.ip;
    // The login limits count every attempt and come first, so the nick is read before the body is
    // judged: per (IP, nick) against guessing one password, per IP against trying many accounts.
    // Both are one step, so an attempt refused by either is counted by neither.
    let body: unknown;
    let parseError: Error | null = null;
    try {
      body = parseJson(ctx.req);
    } catch (err) {
      parseError = err as Error;
    }
    const b = isPlainObject(body) ? body : {};
    const nickKey = typeof b.nick === 'string' ? b.nick.slice(0, 64) : '';
    const wait = await deps.limiter.hitAll([
      { key: `login:${ip}\0${nickKey}`, limit: deps.config.rates.loginPer10Min, windowMs: LOGIN_WINDOW_MS },
      { key: `login-ip:${ip}`, limit: deps.config.rates.loginPerIpPer10Min, windowMs: LOGIN_WINDOW_MS },
    ]);
    if (wait > 0) throw new ApiError('rate_limited', { retryAfter: wait });
    if (parseError) throw parseError;
    const req = checkLogin(b);
    // Against guessing one password from many addresses: a budget per nick, counted before the
    // key is checked (so parallel guesses cannot all slip past it) for every well-formed attempt
    // from an address that has not signed in to this nick lately. Addresses the nick did sign in
    // from are not held, so a stranger who spends it does not lock the owner out of them. An
    // unknown nick is counted the same way, so the answer tells nothing about which nicks exist.
    if (!(await deps.known.has(req.nick, ip))) await limit(ctx, `login-nick:${req.nick}`, deps.config.rates.loginPerNickPer10Min, LOGIN_WINDOW_MS);
    const r = await accounts.login(deps, req.nick, req.authKey);
    await deps.known.remember(req.nick, ip);
    return ok(r.body, sessionCookie(r.token, deps.config.secureCookies));
  },

  me: async (ctx) => ok(await accounts.me(ctx.deps, callerOf(ctx))),

  deleteMe: async (ctx) => {
    const { authKey } = ctx.body();
    await accounts.deleteAccount(ctx.deps, callerOf(ctx), authKey);
    return noContent(clearedSessionCookie(ctx.deps.config.secureCookies));
  },

  logout: async (ctx) => {
    await accounts.logout(ctx.deps, callerOf(ctx));
    return noContent(clearedSessionCookie(ctx.deps.config.secureCookies));
  },

  changePassword: async (ctx) => {
    await accounts.changePassword(ctx.deps, callerOf(ctx), ctx.body());
    return noContent();
  },

  user: async (ctx) => {
    const nick = param(ctx, 'nick');
    if (!isNick(nick)) throw invalid('nick');
    return ok(await accounts.getUser(ctx.deps, nick));
  },
};
