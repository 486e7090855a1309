/** Accounts and sessions (docs/API.md): kdf, register, login, logout, me, password, delete, users. */
import {
  ApiError,
  KDF_DEFAULTS,
  pickKdf,
  type Kdf,
  type LoginResponse,
  type MeResponse,
  type RegisterRequest,
  type PasswordRequest,
  type UserResponse,
} from '@svc/protocol';
import { authKeyHash, decoySalt, newToken, sameHash, sessionId } from '../crypto.js';
import type { AccountRecord } from '../store/types.js';
import type { Caller, Deps } from './deps.js';
import { publishLeave } from './fanout.js';

/** A fixed hash compared against when the nick has no account, so both refusals take the same work. */
const DUMMY_HASH = new Uint8Array(32);

export async function getKdf(deps: Deps, nick: string): Promise<Kdf> {
  const account = await deps.store.getAccount(nick);
  if (account) return pickKdf(account.kdf);
  // No account (never registered or deleted): a decoy of the same shape, stable per nick.
  return { alg: KDF_DEFAULTS.alg, salt: decoySalt(deps.secrets.server, nick), m: KDF_DEFAULTS.m, t: KDF_DEFAULTS.t, p: KDF_DEFAULTS.p };
}

/** A new session for `nick`: returns the cookie token; only its hash is stored. */
async function openSession(deps: Deps, nick: string): Promise<string> {
  const token = newToken();
  await deps.store.createSession({ id: sessionId(token), nick, now: deps.now() });
  return token;
}

export async function register(deps: Deps, req: RegisterRequest): Promise<{ token: string; nick: string }> {
  const token = newToken();
  const r = await deps.store.registerAccount({
    nick: req.nick,
    authKeyHash: authKeyHash(req.authKey),
    kdf: pickKdf(req.kdf),
    publicKey: req.publicKey,
    encryptedKey: { iv: req.encryptedKey.iv, ct: req.encryptedKey.ct },
    invite: req.invite ?? null,
    requireInvite: deps.config.registration === 'invite',
    sessionId: sessionId(token),
    now: deps.now(),
  });
  if ('error' in r) throw new ApiError(r.error);
  return { token, nick: req.nick };
}

function loginBody(a: AccountRecord): LoginResponse {
  return { nick: a.nick, publicKey: a.publicKey, encryptedKey: a.encryptedKey, kdf: pickKdf(a.kdf) };
}

/** Checks the authKey in constant time; an unknown nick does the same work and gets the same refusal. */
async function verify(deps: Deps, nick: string, authKey: string): Promise<AccountRecord> {
  const account = await deps.store.getAccount(nick);
  const ok = sameHash(authKeyHash(authKey), account?.authKeyHash ?? DUMMY_HASH);
  if (!account || !ok) throw new ApiError('invalid_credentials');
  return account;
}

export async function login(deps: Deps, nick: string, authKey: string): Promise<{ token: string; body: LoginResponse }> {
  const account = await verify(deps, nick, authKey);
  return { token: await openSession(deps, nick), body: loginBody(account) };
}

export async function logout(deps: Deps, caller: Caller): Promise<void> {
  await deps.store.deleteSession(caller.sessionId);
  await deps.bus.closeStreams({ sessions: [caller.sessionId] });
}

export async function me(deps: Deps, caller: Caller): Promise<MeResponse> {
  const a = await deps.store.getAccount(caller.nick);
  if (!a) throw new ApiError('unauthenticated');
  return { ...loginBody(a), createdAt: a.createdAt };
}

/** New key material, stored atomically; every other session ends and its streams close. */
export async function changePassword(deps: Deps, caller: Caller, req: PasswordRequest): Promise<void> {
  await verify(deps, caller.nick, req.authKey);
  const ended = await deps.store.changePassword(
    caller.nick,
    { authKeyHash: authKeyHash(req.newAuthKey), kdf: pickKdf(req.kdf), encryptedKey: { iv: req.encryptedKey.iv, ct: req.encryptedKey.ct } },
    caller.sessionId,
  );
  if (ended.length > 0) await deps.bus.closeStreams({ sessions: ended });
}

/** Deletes the account: sessions, devices, queues, contacts go; rooms are left as by `leave`; the nick is retired. */
export async function deleteAccount(deps: Deps, caller: Caller, authKey: string): Promise<void> {
  await verify(deps, caller.nick, authKey);
  const r = await deps.store.deleteAccount(caller.nick, deps.now());
  // Room events first: they are best effort and never throw, while closing streams fails the
  // request when other instances cannot be told, and must not keep the remaining members from
  // hearing that a rekey is owed.
  for (const leave of r.rooms) await publishLeave(deps, leave, undefined);
  await deps.bus.closeStreams({ nicks: [caller.nick], sessions: r.sessions, devices: r.devices });
}

export async function getUser(deps: Deps, nick: string): Promise<UserResponse> {
  const a = await deps.store.getAccount(nick);
  if (!a) throw new ApiError('unknown_user');
  return { nick: a.nick, publicKey: a.publicKey };
}
