/** Contacts (docs/API.md), and what account deletion does to them. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { assertError, dmBody, signup, startServer, userWithDevices, type Client, type TestServer } from '@svc/testkit/harness';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

type ContactRow = { nick: string; publicKey: string; createdAt: number };
async function contacts(c: Client): Promise<ContactRow[]> {
  const r = await c.get('/api/contacts');
  assert.equal(r.status, 200, r.text);
  assert.ok(Array.isArray(r.json));
  return r.json as ContactRow[];
}
const nicks = async (c: Client) => (await contacts(c)).map((x) => x.nick);
const publicKeyOf = async (c: Client): Promise<string> => (await c.get('/api/me')).json.publicKey;
const ms = (n: number) => new Promise((r) => setTimeout(r, n));

test('GET /api/contacts of a new account is []', async () => {
  const a = await signup(server);
  assert.deepEqual(await contacts(a), []);
});

test("POST /api/contacts answers 201 {nick, publicKey} with the peer's public key", async () => {
  const a = await signup(server);
  const b = await signup(server);
  const r = await a.post('/api/contacts', { nick: b.nick });
  assert.equal(r.status, 201, r.text);
  assert.deepEqual(r.json, { nick: b.nick, publicKey: await publicKeyOf(b) });
  assert.deepEqual(await nicks(a), [b.nick]);
});

test('POST /api/contacts adds a row only for the caller', async () => {
  const a = await signup(server);
  const b = await signup(server);
  assert.equal((await a.post('/api/contacts', { nick: b.nick })).status, 201);
  assert.deepEqual(await nicks(b), []);
});

test('POST /api/contacts for a nick already a contact answers 200 {nick, publicKey} and adds no second row', async () => {
  const a = await signup(server);
  const b = await signup(server);
  const first = await a.post('/api/contacts', { nick: b.nick });
  const before = await contacts(a);
  const again = await a.post('/api/contacts', { nick: b.nick });
  assert.equal(again.status, 200, again.text);
  assert.deepEqual(again.json, first.json);
  assert.deepEqual(await contacts(a), before);
});

test('GET /api/contacts lists [{nick, publicKey, createdAt}] oldest first', async () => {
  const a = await signup(server);
  const peers = [await signup(server, `zz${process.pid % 1000}_c`), await signup(server), await signup(server, `aa${process.pid % 1000}_c`)];
  const t0 = Date.now();
  for (const p of peers) {
    assert.equal((await a.post('/api/contacts', { nick: p.nick })).status, 201);
    await ms(3);
  }
  // adding an existing contact again does not move it
  assert.equal((await a.post('/api/contacts', { nick: peers[0]!.nick })).status, 200);
  const list = await contacts(a);
  assert.deepEqual(
    list.map((x) => x.nick),
    peers.map((p) => p.nick),
  );
  for (const [i, row] of list.entries()) {
    assert.deepEqual(Object.keys(row).sort(), ['createdAt', 'nick', 'publicKey']);
    assert.equal(row.publicKey, await publicKeyOf(peers[i]!));
    assert.ok(Number.isInteger(row.createdAt) && row.createdAt >= t0 - 1000 && row.createdAt <= Date.now() + 1000);
    if (i > 0) assert.ok(row.createdAt >= list[i - 1]!.createdAt);
  }
});

test('POST /api/contacts for a nick with no account answers 404 unknown_user and adds nothing', async () => {
  const a = await signup(server);
  assertError(await a.post('/api/contacts', { nick: `nobody_${process.pid}` }), 404, 'unknown_user');
  assert.deepEqual(await contacts(a), []);
});

test("POST /api/contacts with the caller's own nick answers 400 self and adds nothing", async () => {
  const a = await signup(server);
  assertError(await a.post('/api/contacts', { nick: a.nick }), 400, 'self');
  assert.deepEqual(await contacts(a), []);
});

test('POST /api/contacts with a value that is not a nick answers 400 invalid field nick and adds nothing', async () => {
  const a = await signup(server);
  const b = await signup(server);
  const bad: unknown[] = [b.nick.toUpperCase(), 'a', 'a'.repeat(33), 'a-b', 'ab c', `${b.nick} `, 'ünï', '', 42, null, [b.nick], { nick: b.nick }];
  for (const nick of bad) assertError(await a.post('/api/contacts', { nick }), 400, 'invalid', 'nick');
  assertError(await a.post('/api/contacts', {}), 400, 'invalid', 'nick');
  assert.deepEqual(await contacts(a), []);
});

test('POST /api/contacts with a body that is not JSON answers 400 bad_json', async () => {
  const a = await signup(server);
  assertError(await a.post('/api/contacts', '{"nick":'), 400, 'bad_json');
  assert.deepEqual(await contacts(a), []);
});

test("DELETE /api/contacts/{nick} answers 204 and removes only the caller's row", async () => {
  const a = await signup(server);
  const b = await signup(server);
  const c = await signup(server);
  await a.post('/api/contacts', { nick: b.nick });
  await a.post('/api/contacts', { nick: c.nick });
  await b.post('/api/contacts', { nick: a.nick });
  const r = await a.del(`/api/contacts/${b.nick}`);
  assert.equal(r.status, 204);
  assert.equal(r.text, '');
  assert.deepEqual(await nicks(a), [c.nick]);
  assert.deepEqual(await nicks(b), [a.nick]);
});

test('DELETE /api/contacts/{nick} answers 204 also when the contact is absent', async () => {
  const a = await signup(server);
  const b = await signup(server);
  assert.equal((await a.del(`/api/contacts/${b.nick}`)).status, 204);
  assert.equal((await a.del(`/api/contacts/nobody_${process.pid}`)).status, 204);
  await a.post('/api/contacts', { nick: b.nick });
  assert.equal((await a.del(`/api/contacts/${b.nick}`)).status, 204);
  assert.equal((await a.del(`/api/contacts/${b.nick}`)).status, 204);
  assert.deepEqual(await contacts(a), []);
});

test('the first DM creates contacts in both directions', async () => {
  const a = await userWithDevices(server, 1);
  const b = await userWithDevices(server, 1);
  const t0 = Date.now();
  const r = await a.c.post('/api/messages', dmBody(b.c.nick), { device: a.devices[0]! });
  assert.equal(r.status, 202, r.text);
  const ca = await contacts(a.c);
  const cb = await contacts(b.c);
  assert.deepEqual(
    ca.map((x) => x.nick),
    [b.c.nick],
  );
  assert.deepEqual(
    cb.map((x) => x.nick),
    [a.c.nick],
  );
  assert.equal(ca[0]!.publicKey, await publicKeyOf(b.c));
  assert.equal(cb[0]!.publicKey, await publicKeyOf(a.c));
  for (const row of [ca[0]!, cb[0]!]) assert.ok(Number.isInteger(row.createdAt) && row.createdAt >= t0 - 1000);
});

test('further DMs, in either direction, add no second contact row', async () => {
  const a = await userWithDevices(server, 1);
  const b = await userWithDevices(server, 1);
  const c = await signup(server);
  await a.c.post('/api/contacts', { nick: c.nick });
  await ms(3);
  assert.equal((await a.c.post('/api/messages', dmBody(b.c.nick), { device: a.devices[0]! })).status, 202);
  const before = { a: await contacts(a.c), b: await contacts(b.c) };
  assert.equal((await a.c.post('/api/messages', dmBody(b.c.nick), { device: a.devices[0]! })).status, 202);
  assert.equal((await b.c.post('/api/messages', dmBody(a.c.nick), { device: b.devices[0]! })).status, 202);
  assert.deepEqual(await contacts(a.c), before.a);
  assert.deepEqual(await contacts(b.c), before.b);
  assert.deepEqual(
    before.a.map((x) => x.nick),
    [c.nick, b.c.nick],
  );
});

test('a DM to a peer already added with POST keeps that row and adds the reverse row', async () => {
  const a = await userWithDevices(server, 1);
  const b = await userWithDevices(server, 1);
  await a.c.post('/api/contacts', { nick: b.c.nick });
  const before = await contacts(a.c);
  assert.equal((await a.c.post('/api/messages', dmBody(b.c.nick), { device: a.devices[0]! })).status, 202);
  assert.deepEqual(await contacts(a.c), before);
  assert.deepEqual(await nicks(b.c), [a.c.nick]);
});

test('a refused DM creates no contact', async () => {
  const a = await userWithDevices(server, 1);
  const b = await signup(server);
  assert.equal((await a.c.post('/api/messages', { ...dmBody(b.nick), keyId: 'x' }, { device: a.devices[0]! })).status, 400);
  assert.equal((await a.c.post('/api/messages', dmBody(b.nick), { device: 'unknown-device' })).status, 403);
  assert.deepEqual(await contacts(a.c), []);
  assert.deepEqual(await contacts(b), []);
});

test('a deleted account disappears from contact lists and can no longer be added', async () => {
  const a = await signup(server);
  const b = await signup(server);
  const c = await signup(server);
  await a.post('/api/contacts', { nick: b.nick });
  await a.post('/api/contacts', { nick: c.nick });
  await b.post('/api/contacts', { nick: a.nick });
  const del = await b.del('/api/me', { authKey: b.authKey });
  assert.equal(del.status, 204, del.text);
  assert.deepEqual(await nicks(a), [c.nick]);
  assertError(await a.post('/api/contacts', { nick: b.nick }), 404, 'unknown_user');
  assert.deepEqual(await nicks(a), [c.nick]);
});

test('POST /api/contacts past 1000 contacts answers 409 limit_reached', async () => {
  const a = await signup(server);
  const peers: string[] = [];
  // accounts and contacts are made in parallel batches to keep the test quick
  for (let i = 0; i < 1001; i += 50)
    peers.push(...(await Promise.all(Array.from({ length: Math.min(50, 1001 - i) }, () => signup(server)))).map((c) => c.nick));
  // Ten at a time: each addition of one account waits for the one before it (its count is
  // checked under a lock), and fifty at once on a loaded machine held PostgreSQL's pool of ten past
  // its 2.5 s wait for a connection (a 500, as designed for an unreachable database).
  for (let i = 0; i < 1000; i += 10) {
    const rs = await Promise.all(peers.slice(i, i + 10).map((nick) => a.post('/api/contacts', { nick })));
    for (const r of rs) assert.equal(r.status, 201, r.text);
  }
  assertError(await a.post('/api/contacts', { nick: peers[1000] }), 409, 'limit_reached');
  assert.equal((await contacts(a)).length, 1000);
  assert.equal((await a.post('/api/contacts', { nick: peers[3] })).status, 200);
});
