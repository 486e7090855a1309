/** Account and session routes (interface.md "Account and session", decisions.md §3). */
import {
  ApiError,
  invalid,
  isAuthKey,
  isEncryptedKey,
  isKdf,
  isNick,
  isPlainObject,
  isPublicKey,
  type ConfigResponse,
  type EncryptedKey,
  type Kdf,
} from '@svc/protocol';
import * as accounts from '../domain/accounts.js';
import { parseJson, parseJsonObject } from '../http/body.js';
import { clearedSessionCookie, sessionCookie } from '../http/cookies.js';
import { isStorableText } from '../http/text.js';
import { created, noContent, ok } from '../http/reply.js';
import { callerOf, param, query, type RouteContext, type RouteHandlers } from './context.js';

const MAX_INVITE_CHARS = 128;

async function limit(ctx: RouteContext, key: string, max: number, windowMs: number): Promise<void> {
  const wait = await ctx.deps.limiter.hit(key, max, windowMs);
  if (wait > 0) throw new ApiError('rate_limited', { retryAfter: wait });
}

const LOGIN_WINDOW_MS = 600_000;

/** The key material fields shared by register and password, checked in this order. */
function keyMaterial(b: Record<string, unknown>, authField: string): { authKey: string; kdf: Kdf; encryptedKey: EncryptedKey } {
  if (!isAuthKey(b[authField])) throw invalid(authField);
  if (!isKdf(b.kdf)) throw invalid('kdf');
  if (!isEncryptedKey(b.encryptedKey)) throw invalid('encryptedKey');
  return { authKey: b[authField] as string, kdf: b.kdf, encryptedKey: b.encryptedKey };
}

export const accountRoutes: RouteHandlers = {
  'GET /api/config': async ({ deps }) => {
    const body: ConfigResponse = {
      revision: deps.config.build.revision,
      commitTime: deps.config.build.commitTime,
      registration: deps.config.registration,
      vapidPublicKey: deps.secrets.vapidPublicKey,
    };
    return ok(body);
  },

  'GET /api/kdf': async (ctx) => {
    const nick = query(ctx, 'nick');
    if (!isNick(nick)) throw invalid('nick');
    return ok(await accounts.getKdf(ctx.deps, nick));
  },

  'POST /api/register': async (ctx) => {
    const { deps } = ctx;
    await limit(ctx, `register:${ctx.ip}`, deps.config.rates.registerPerHour, 3_600_000);
    const b = parseJsonObject(ctx.req);
    if (!isNick(b.nick)) throw new ApiError('invalid_nick');
    const { authKey, kdf, encryptedKey } = keyMaterial(b, 'authKey');
    if (!isPublicKey(b.publicKey)) throw invalid('publicKey');
    const inviteGiven = b.invite !== undefined && b.invite !== null && b.invite !== '';
    if (inviteGiven && (typeof b.invite !== 'string' || b.invite.length > MAX_INVITE_CHARS || !isStorableText(b.invite))) throw invalid('invite');
    const r = await accounts.register(deps, {
      nick: b.nick,
      authKey,
      kdf,
      publicKey: b.publicKey,
      encryptedKey,
      ...(inviteGiven ? { invite: b.invite as string } : {}),
    });
    return created({ nick: r.nick }, sessionCookie(r.token, deps.config.secureCookies));
  },

  'POST /api/login': async (ctx) => {
    const { deps } = ctx;
    // The login limits count every attempt and come first, so the nick is read before the body is
    // judged: per (IP, nick) against guessing one password, per IP against trying many accounts.
    // Both are one step, so an attempt refused by either is counted by neither.
    let body: unknown;
    let parseError: unknown = null;
    try {
      body = parseJson(ctx.req);
    } catch (err) {
      parseError = err;
    }
    const b = isPlainObject(body) ? body : {};
    const nickKey = typeof b.nick === 'string' ? b.nick.slice(0, 64) : '';
    const wait = await deps.limiter.hitAll([
      { key: `login:${ctx.ip}\0${nickKey}`, limit: deps.config.rates.loginPer10Min, windowMs: LOGIN_WINDOW_MS },
      { key: `login-ip:${ctx.ip}`, limit: deps.config.rates.loginPerIpPer10Min, windowMs: LOGIN_WINDOW_MS },
    ]);
    if (wait > 0) throw new ApiError('rate_limited', { retryAfter: wait });
    if (parseError) throw parseError;
    if (!isNick(b.nick)) throw invalid('nick');
    if (!isAuthKey(b.authKey)) throw invalid('authKey');
    const r = await accounts.login(deps, b.nick, b.authKey);
    return ok(r.body, sessionCookie(r.token, deps.config.secureCookies));
  },

  'GET /api/me': async (ctx) => ok(await accounts.me(ctx.deps, callerOf(ctx))),

  'DELETE /api/me': async (ctx) => {
    const b = parseJsonObject(ctx.req);
    if (!isAuthKey(b.authKey)) throw invalid('authKey');
    await accounts.deleteAccount(ctx.deps, callerOf(ctx), b.authKey);
    return noContent(clearedSessionCookie(ctx.deps.config.secureCookies));
  },

  'POST /api/logout': async (ctx) => {
    await accounts.logout(ctx.deps, callerOf(ctx));
    return noContent(clearedSessionCookie(ctx.deps.config.secureCookies));
  },

  'POST /api/password': async (ctx) => {
    const b = parseJsonObject(ctx.req);
    if (!isAuthKey(b.authKey)) throw invalid('authKey');
    const next = keyMaterial(b, 'newAuthKey');
    await accounts.changePassword(ctx.deps, callerOf(ctx), { authKey: b.authKey, newAuthKey: next.authKey, kdf: next.kdf, encryptedKey: next.encryptedKey });
    return noContent();
  },

  'GET /api/users/:nick': async (ctx) => {
    const nick = param(ctx, 'nick');
    if (!isNick(nick)) throw invalid('nick');
    return ok(await accounts.getUser(ctx.deps, nick));
  },
};
