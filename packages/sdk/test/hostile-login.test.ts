/**
 * Sign-in as a hostile service would try it: the answer to POST /api/login names an account other
 * than the one typed. The client refuses it and opens nothing (hardening issue: "Sign-in trusts
 * the nick the server sends back").
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { FetchLike } from '../src/index.js';
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
