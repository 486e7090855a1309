/**
 * What anyone can make a device keep by naming messages that never arrive (conversation/waiting.ts),
 * played at the rules level: a stranger's flood of receipts, reactions, edits and deletions for
 * made-up ids stays within a small budget and a stated number of bytes, a contact's within the cap
 * per sender and chat, everyone's within the total; a full cap refuses the new action and keeps
 * what waits; waiting actions expire after 7 days; messaging goes on.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serialize } from 'node:v8';
import { makeUlid } from '@svc/protocol';
import {
  ingest,
  MAX_PADDED_BYTES,
  MAX_RECEIPT_IDS,
  MemoryStore,
  randomBytes,
  WAITING_PER_SENDER_CHAT,
  WAITING_PER_STRANGER,
  WAITING_TOTAL,
  WAITING_TTL_MS,
  type ChatId,
  type Plain,
  type PlainInput,
  type RuleContext,
} from '../src/index.js';

/** What one waiting row may take at most: an edit's text (a whole message) and its bookkeeping. */
const WAITING_ROW_MAX_BYTES = MAX_PADDED_BYTES + 1024;

const newId = (): string => makeUlid(Date.now(), randomBytes);
const mid = (): string => Buffer.from(randomBytes(16)).toString('base64url');
/** A long edit, as large as a message may be. */
const LONG = 'x'.repeat(MAX_PADDED_BYTES - 600);

function world(o: { rooms?: Record<string, string[]>; now?: () => number } = {}) {
  const store = new MemoryStore();
  const rooms = o.rooms ?? {};
  const c: RuleContext = {
    store,
    me: 'alice',
    isMember: (chat, nick) => (chat.startsWith('dm:') ? nick === 'alice' || nick === chat.slice(3) : (rooms[chat] ?? []).includes(nick)),
    sharesRoom: (nick) => Object.values(rooms).some((m) => m.includes(nick)),
    ...(o.now ? { now: o.now } : {}),
  };
  const arrive = (from: string, chat: ChatId, plain: PlainInput, id = newId()) =>
    ingest(c, { ok: true, id, ts: Date.now(), from, chat, sentAt: plain.sentAt, plain: { v: 1, ...plain } as Plain });
  return { store, c, arrive };
}

/** Every kind of action, each for made-up ids, `rounds` times over. */
async function flood(arrive: ReturnType<typeof world>['arrive'], from: string, chat: ChatId, rounds: number): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    const ids = Array.from({ length: MAX_RECEIPT_IDS }, newId);
    await arrive(from, chat, { type: 'receipt', ids, status: i % 2 ? 'read' : 'delivered', sentAt: 1, mid: mid() });
    await arrive(from, chat, { type: 'reaction', target: newId(), emoji: '😈', op: 'add', sentAt: 1, mid: mid() });
    await arrive(from, chat, { type: 'edit', target: newId(), body: LONG, sentAt: 1, mid: mid() });
    await arrive(from, chat, { type: 'delete', target: newId(), sentAt: 1, mid: mid() });
  }
}

const storedBytes = (store: MemoryStore): number => serialize(store).length;

test('a waiting receipt keeps one row per target, holding only that target', async () => {
  const { store, arrive } = world();
  await arrive('bob', 'dm:bob', { type: 'text', body: 'hi', sentAt: 1 });
  const ids = Array.from({ length: 40 }, newId);
  await arrive('bob', 'dm:bob', { type: 'receipt', ids, status: 'read', sentAt: 2, mid: mid() });
  assert.equal(await store.countPending({ from: 'bob', chat: 'dm:bob' }), 40);
  const waiting = await store.takePending(ids[7]!);
  assert.equal(waiting.length, 1);
  assert.deepEqual(waiting[0]!.plain, { v: 1, type: 'receipt', ids: [ids[7]], status: 'read', sentAt: 2 });
});

test(`a stranger's flood of receipts, reactions, edits and deletes for unknown ids keeps at most ${WAITING_PER_STRANGER} rows and ${WAITING_PER_STRANGER * WAITING_ROW_MAX_BYTES} bytes; a message afterwards is stored`, async () => {
  const { store, arrive } = world();
  const empty = storedBytes(store);
  await flood(arrive, 'mallory', 'dm:mallory', 30);
  assert.ok((await store.countPending()) <= WAITING_PER_STRANGER, `${await store.countPending()} rows wait`);
  const grown = storedBytes(store) - empty;
  assert.ok(grown <= WAITING_PER_STRANGER * WAITING_ROW_MAX_BYTES, `${grown} bytes stored`);
  const r = await arrive('mallory', 'dm:mallory', { type: 'text', body: 'hello, a real message', sentAt: 2 });
  assert.equal(r.added?.body, 'hello, a real message');
  assert.equal((await store.chat('dm:mallory')).length, 1);
});

test(`a contact's waiting actions stop at ${WAITING_PER_SENDER_CHAT} per chat, and the full cap keeps what waits and refuses the new one`, async () => {
  const { store, arrive } = world({ rooms: { 'room:r1': ['alice', 'bob'] } });
  const first = newId();
  await arrive('bob', 'room:r1', { type: 'reaction', target: first, emoji: '👍', op: 'add', sentAt: 1 });
  await flood(arrive, 'bob', 'room:r1', 2);
  assert.equal(await store.countPending({ from: 'bob', chat: 'room:r1' }), WAITING_PER_SENDER_CHAT);
  const late = newId();
  const r = await arrive('bob', 'room:r1', { type: 'delete', target: late, sentAt: 2 });
  assert.equal(r.ignored, 'too many waiting in this chat');
  assert.deepEqual(await store.takePending(late), []);
  assert.equal((await store.takePending(first)).length, 1, 'the oldest still waits');
  // Another chat of the same contact has its own room to wait in.
  await arrive('bob', 'dm:bob', { type: 'text', body: 'hi', sentAt: 1 });
  await arrive('bob', 'dm:bob', { type: 'delete', target: late, sentAt: 3 });
  assert.equal(await store.countPending({ from: 'bob', chat: 'dm:bob' }), 1);
});

test(`no more than ${WAITING_TOTAL} actions wait in all`, async () => {
  const members = Array.from({ length: Math.ceil(WAITING_TOTAL / WAITING_PER_SENDER_CHAT) + 1 }, (_, i) => `m${i}`);
  const { store, arrive } = world({ rooms: { 'room:r1': ['alice', ...members] } });
  for (const m of members) {
    const ids = Array.from({ length: WAITING_PER_SENDER_CHAT }, newId);
    await arrive(m, 'room:r1', { type: 'receipt', ids, status: 'read', sentAt: 1 });
  }
  assert.equal(await store.countPending(), WAITING_TOTAL);
});

test('waiting actions expire after 7 days: purged when a cap is reached, so the sender may wait again', async () => {
  let now = 1_800_000_000_000;
  const { store, arrive } = world({ now: () => now });
  await flood(arrive, 'mallory', 'dm:mallory', 1);
  assert.equal(await store.countPending(), WAITING_PER_STRANGER);
  now += WAITING_TTL_MS - 1000;
  assert.equal((await arrive('mallory', 'dm:mallory', { type: 'delete', target: newId(), sentAt: 2 })).ignored, 'too many waiting from a stranger');
  now += 2000;
  const target = newId();
  assert.equal((await arrive('mallory', 'dm:mallory', { type: 'delete', target, sentAt: 3 })).ignored, undefined);
  assert.equal(await store.countPending(), 1, 'the expired rows are gone, the new one waits');
  assert.equal((await store.takePending(target)).length, 1);
});

test('a waiting action from someone known applies when its target arrives, whatever the stranger did', async () => {
  const { store, arrive } = world({ rooms: { 'room:r1': ['alice', 'bob'] } });
  await flood(arrive, 'mallory', 'dm:mallory', 3);
  const t = newId();
  await arrive('bob', 'room:r1', { type: 'edit', target: t, body: 'edited', sentAt: 5 });
  await arrive('bob', 'room:r1', { type: 'text', body: 'original', sentAt: 4 }, t);
  assert.equal((await store.get(t))?.body, 'edited');
});
