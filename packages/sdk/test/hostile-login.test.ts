/**
 * Sign-in as a hostile service would try it: the answer to POST /api/login names an account other
 * than the one typed. The client refuses it and opens nothing (docs/CRYPTO.md §3: the
 * service cannot switch a person into another account).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { KDF_DEFAULTS, KDF_MIN, type FetchLike } from '../src/index.js';
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

/** Serves `kdf` on GET /api/kdf whatever the account uses. */
const lyingKdf =
  (kdf: { m: number; t: number }) =>
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
