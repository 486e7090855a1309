/**
 * Sign-in as a hostile service would try it: the answer to POST /api/login names an account other
 * than the one typed, or other key-derivation parameters than the ones the password was derived
 * with. The client refuses it and opens nothing (docs/CRYPTO.md, "Identity": the service cannot
 * switch a person into another account), and later derivations use the parameters of the sign-in.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { isSdkError, KDF_DEFAULTS, KDF_MIN, type FetchLike } from '../src/index.js';
import { client, register, startServer, type TestServer } from './server.js';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

/** Rewrites the nick of every login answer. */
const lyingLogin =
  (nick: string) =>
  (f: FetchLike): FetchLike =>
  async (url, init) => {
    const res = await f(url, init);
    if (!new URL(url).pathname.endsWith('/api/login') || res.status !== 200) return res;
    const body = (await res.json()) as Record<string, unknown>;
    return new Response(JSON.stringify({ ...body, nick }), { status: 200, headers: res.headers });
  };

test('a login answer that names another account than the one typed is refused, and nothing is opened', async () => {
  const alice = await register(server);
  const mallory = await register(server);
  const d = client(server, { wrap: lyingLogin(mallory.m.nick) });
  await assert.rejects(d.m.login({ nick: alice.m.nick, password: alice.password }), { code: 'bad_response' });
  assert.equal(d.m.loggedIn, false);
  // The honest answer still signs in.
  const ok = client(server);
  await ok.m.login({ nick: alice.m.nick, password: alice.password });
  assert.equal(ok.m.nick, alice.m.nick);
});

/** Rewrites the `kdf` of every answer to `path` (POST /api/login, GET /api/me). */
const lyingAnswerKdf =
  (path: string, kdf: Record<string, unknown>) =>
  (f: FetchLike): FetchLike =>
  async (url, init) => {
    const res = await f(url, init);
    if (new URL(url).pathname !== path || res.status !== 200) return res;
    const body = (await res.json()) as { kdf: Record<string, unknown> };
    return new Response(JSON.stringify({ ...body, kdf: { ...body.kdf, ...kdf } }), { status: 200, headers: res.headers });
  };

const OTHER_SALT = 'AAAAAAAAAAAAAAAAAAAAAA';

test('a login answer whose kdf differs from the parameters the password was derived with is refused: nothing is opened, and the session it made ends', async () => {
  const alice = await register(server);
  for (const lie of [{ m: 1048576, t: 16 }, { salt: OTHER_SALT }, { p: 2 }]) {
    const d = client(server, { wrap: lyingAnswerKdf('/api/login', lie) });
    await assert.rejects(d.m.login({ nick: alice.m.nick, password: alice.password }), (e: unknown) => {
      assert.ok(isSdkError(e, 'bad_response'), JSON.stringify(lie));
      assert.match((e as Error).message, /other key-derivation parameters/);
      return true;
    });
    assert.equal(d.m.loggedIn, false, 'nothing opened');
    assert.throws(() => d.m.kdf, { code: 'not_ready' });
    await assert.rejects(d.api.me(), { code: 'unauthenticated' }, 'the session of the refused answer is logged out');
  }
  // The honest answer signs in, and keeps the parameters the password was derived with.
  const ok = client(server);
  await ok.m.login({ nick: alice.m.nick, password: alice.password });
  assert.deepEqual(ok.m.kdf, await ok.api.kdf(alice.m.nick));
});

test('a password change and an account deletion derive the password with the parameters of the sign-in, whatever GET /api/me answers', async () => {
  const alice = await register(server);
  const d = client(server, { wrap: lyingAnswerKdf('/api/me', { salt: OTHER_SALT }) });
  await d.m.login({ nick: alice.m.nick, password: alice.password });
  const used = d.m.kdf;
  await d.m.changePassword(alice.password, 'a new password for alice', { kdf: KDF_MIN });
  assert.notEqual(d.m.kdf.salt, used.salt, 'the new password has its own salt');
  await d.m.deleteAccount('a new password for alice');
  assert.equal(d.m.loggedIn, false);
  await assert.rejects(client(server).m.login({ nick: alice.m.nick, password: 'a new password for alice' }), { code: 'invalid_credentials' });
});

/** Serves `kdf` on GET /api/kdf whatever the account uses. */
const lyingKdf =
  (kdf: { m?: number; t?: number; p?: number }) =>
  (f: FetchLike): FetchLike =>
  async (url, init) => {
    const res = await f(url, init);
    if (!new URL(url).pathname.endsWith('/api/kdf') || res.status !== 200) return res;
    const body = (await res.json()) as Record<string, unknown>;
    return new Response(JSON.stringify({ ...body, ...kdf }), { status: 200, headers: res.headers });
  };

test('a new device refuses parameters below the defaults with kdf_weak, before deriving or sending anything; the person may accept after a warning', async () => {
  const alice = await register(server); // the tests' cheapest parameters, as a hostile service would serve them
  const d = client(server, { kdfFloor: KDF_DEFAULTS });
  await assert.rejects(d.m.login({ nick: alice.m.nick, password: alice.password }), { code: 'kdf_weak' });
  assert.deepEqual(
    d.requests.filter((r) => r.startsWith('POST')),
    [],
    'no authKey left the device',
  );
  await d.m.login({ nick: alice.m.nick, password: alice.password, acceptWeakKdf: true });
  assert.equal(d.m.nick, alice.m.nick);
});

test('a device that has seen an account’s parameters refuses lower ones served later', async () => {
  const alice = await register(server, undefined, undefined, {});
  const seen = { m: KDF_MIN.m * 2, t: KDF_MIN.t + 1 };
  const d = client(server, { kdfFloor: seen, wrap: lyingKdf(KDF_MIN) });
  await assert.rejects(d.m.login({ nick: alice.m.nick, password: alice.password }), { code: 'kdf_weak' });
  assert.deepEqual(
    d.requests.filter((r) => r.startsWith('POST')),
    [],
  );
});

test('parameters outside the accepted bounds, served for an account, are refused with kdf_refused before anything is derived or sent, whatever the person accepts', async () => {
  const alice = await register(server);
  for (const bad of [{ m: 1048577 }, { m: 19455 }, { t: 17 }, { t: 1 }, { p: 5 }, { p: 0 }]) {
    const d = client(server, { wrap: lyingKdf(bad) });
    await assert.rejects(
      d.m.login({ nick: alice.m.nick, password: alice.password, acceptWeakKdf: true }),
      { code: 'kdf_refused' },
      JSON.stringify(bad),
    );
    assert.deepEqual(
      d.requests.filter((r) => r.startsWith('POST')),
      [],
      `no authKey left the device (${JSON.stringify(bad)})`,
    );
    assert.equal(d.m.loggedIn, false);
  }
});

test('a device that signs in again while it holds a session first logs that session out, then logs in', async () => {
  const alice = await register(server);
  const d = client(server);
  await d.m.login({ nick: alice.m.nick, password: alice.password });
  d.requests.length = 0;
  await d.m.login({ nick: alice.m.nick, password: alice.password });
  const posts = d.requests.filter((r) => r.startsWith('POST'));
  assert.deepEqual(posts, ['POST /api/logout', 'POST /api/login'], 'the old session ends before the new one begins');
  assert.equal(d.m.nick, alice.m.nick);
});
