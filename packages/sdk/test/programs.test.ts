/**
 * What a program that runs once per command (the command-line client, a bot) needs from the SDK
 * to be a device like the web app: a session kept as plain data and resumed in a new process,
 * the session cookie carried over, the conversation store and the pacer's budget kept between
 * runs, trust on first use over a small storage, and receipts that can be turned off.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  ApiClient,
  Conversations,
  cookieFetch,
  KeyPins,
  MemoryStore,
  metaPins,
  Pacer,
  portableSession,
  resumePortable,
  SdkError,
  type ChatMessage,
  type MessengerOptions,
} from '../src/index.js';
import { hashWasmArgon2 } from './hash-wasm.js';
import { Inbox, ORIGIN, register, sleep, startServer, type TestServer } from './server.js';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

/** A new process's API client and Messenger options, with the cookie a file kept. */
function fresh(cookie: string | null, o: Partial<MessengerOptions> = {}): MessengerOptions {
  const api = new ApiClient({ baseUrl: server.url, origin: ORIGIN, fetch: cookieFetch(undefined, cookie) });
  return { api, argon2: hashWasmArgon2, ...o };
}

test('a portable session resumes in a new process with the kept cookie, and sends and decrypts as the same device', async () => {
  const alice = await register(server);
  const bob = await register(server);
  const kept = JSON.parse(JSON.stringify(await portableSession(alice.m, alice.password, hashWasmArgon2))) as unknown;
  const cookie = (alice.jar as ReturnType<typeof cookieFetch>).cookie();
  assert.ok(cookie);
  const again = await resumePortable(fresh(cookie), kept);
  assert.equal(again.nick, alice.m.nick);
  assert.equal(again.api.device, alice.deviceId);
  const inbox = new Inbox(bob).start();
  try {
    await again.sendDm(bob.m.nick, 'from the resumed process');
    await inbox.count(1);
    const d = await bob.m.decryptEnvelope(inbox.envelopes[0]!);
    assert.ok(d.ok && d.plain.type === 'text' && d.plain.body === 'from the resumed process');
  } finally {
    await inbox.close();
  }
});

test('a portable session whose key is damaged or of another account is refused, not used', async () => {
  const alice = await register(server);
  const bob = await register(server);
  const a = await portableSession(alice.m, alice.password, hashWasmArgon2);
  const b = await portableSession(bob.m, bob.password, hashWasmArgon2);
  await assert.rejects(resumePortable(fresh(null), { ...a, pkcs8: b.pkcs8 }), (e) => e instanceof SdkError && e.code === 'bad_session');
  await assert.rejects(resumePortable(fresh(null), { ...a, pkcs8: 'AAAA' }), (e) => e instanceof SdkError && e.code === 'bad_session');
  await assert.rejects(portableSession(alice.m, 'not the password', hashWasmArgon2), (e) => e instanceof SdkError && e.code === 'bad_identity');
});

test('a MemoryStore snapshot gives back every record, the duplicate index, waiting actions, the outbox and named values', async () => {
  const s = new MemoryStore();
  const m: ChatMessage = { id: '01A', chat: 'dm:bob', ts: 5, from: 'bob', sentAt: 4, mid: 'mid-1', kind: 'text', body: 'hi' };
  await s.put(m);
  await s.addPending({
    id: '01B',
    target: '01Z',
    chat: 'dm:bob',
    from: 'bob',
    ts: 6,
    plain: { v: 1, type: 'delete', target: '01Z', sentAt: 6 },
    at: 7,
  });
  await s.outboxPut({
    id: '01C',
    chat: 'dm:bob',
    plain: { type: 'text', body: 'out', sentAt: 8 },
    createdAt: 8,
    priority: 'user',
    state: 'waiting',
    attempts: 0,
  });
  await s.putMeta('__proto__', { x: 1 });
  const copy = MemoryStore.from(JSON.parse(JSON.stringify(s.snapshot())) as ReturnType<MemoryStore['snapshot']>);
  assert.deepEqual(await copy.get('01A'), m);
  assert.equal(await copy.idForMid('bob', 'mid-1'), '01A');
  assert.deepEqual(await copy.chat('dm:bob'), [m]);
  assert.equal(await copy.countPending(), 1);
  assert.equal((await copy.outboxList())[0]?.id, '01C');
  assert.deepEqual(await copy.getMeta('__proto__'), { x: 1 });
  // The copy shares nothing with the original.
  await copy.remove('01A');
  assert.ok(await s.get('01A'));
});

test("a pacer restored from another run's snapshot counts that run's sends and its 429 wait", () => {
  let now = 1_000_000;
  const first = new Pacer(3, () => now);
  first.note();
  first.note();
  first.refused(1);
  first.note();
  const snap = JSON.parse(JSON.stringify(first.snapshot())) as ReturnType<Pacer['snapshot']>;
  now += 10;
  const next = new Pacer(3, () => now);
  next.restore(snap);
  assert.equal(next.used, 2);
  assert.equal(next.waitMs('user'), 990, 'the 429 of the other run still holds');
  now += 61_000;
  next.restore({ sent: [1], blockedUntil: Number.NaN });
  assert.equal(next.used, 0, 'sends out of the window drop');
  assert.equal(next.waitMs('user'), 0);
});

test('trust on first use: the first key is pinned, a changed key refuses sending but not reading, and accept pins it', async () => {
  const store = new MemoryStore();
  let t = 100;
  const pins = new KeyPins(metaPins(store), { nick: 'me', publicKey: 'MINE' }, () => t);
  await pins.keyCheck('bob', 'K1', 'send');
  assert.deepEqual(await pins.status('bob'), { publicKey: 'K1', pinnedAt: 100 });
  await assert.rejects(
    Promise.resolve(pins.keyCheck('bob', 'K2', 'send')),
    (e) => e instanceof SdkError && e.code === 'untrusted_key' && /changed/.test(e.message),
  );
  await pins.keyCheck('bob', 'K2', 'receive');
  assert.deepEqual(await pins.status('bob'), { publicKey: 'K1', pinnedAt: 100, changedTo: 'K2' });
  assert.equal(await pins.accept('nobody'), null);
  t = 200;
  assert.equal(await pins.accept('bob'), 'K2');
  await pins.keyCheck('bob', 'K2', 'send');
  assert.deepEqual(await pins.status('bob'), { publicKey: 'K2', pinnedAt: 200 });
  // A pin kept in a store snapshot holds in the next run.
  const next = new KeyPins(metaPins(MemoryStore.from(store.snapshot())), { nick: 'me', publicKey: 'MINE' });
  await assert.rejects(Promise.resolve(next.keyCheck('bob', 'K1', 'send')), (e) => e instanceof SdkError && e.code === 'untrusted_key');
});

test('with receipts off, a received message is stored but no receipt goes back to its sender', async () => {
  const alice = await register(server);
  const bot = await register(server);
  const conv = new Conversations({ messenger: bot.m, store: new MemoryStore(), receipts: false });
  const botInbox = new Inbox(bot).start();
  const aliceInbox = new Inbox(alice).start();
  try {
    await aliceInbox.ready();
    await alice.m.sendDm(bot.m.nick, 'no receipt please');
    await botInbox.count(1);
    const r = await conv.receive(botInbox.envelopes[0]!);
    assert.equal(r.added?.body, 'no receipt please');
    assert.equal(r.added?.reported, undefined);
    await conv.markRead(`dm:${alice.m.nick}`);
    await sleep(2_000);
    assert.equal(aliceInbox.envelopes.length, 0, 'nothing came back to the sender');
  } finally {
    conv.stop();
    await botInbox.close();
    await aliceInbox.close();
  }
});
