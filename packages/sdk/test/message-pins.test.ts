/**
 * Pinned messages (conversation/message-pins.ts): any member of a room and either person of a DM
 * pins or unpins; pins reach every member; an edit changes the pinned text shown and a deletion
 * takes the pin away. The rules part plays arrivals in every order, as a slow network or a hostile
 * server could deliver them: every device ends with the same pins.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ingest, MemoryStore, pinnedMessages, pinStamp, type ChatId, type Plain, type PlainInput, type RuleContext } from '../src/index.js';
import { register, startServer, type TestServer } from './server.js';
import { roomOf, run, until, type App } from './room-apps.js';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

let n = 0;
const id = (): string => `01JD${String(++n).padStart(22, '0')}`;
const MID = (c: string) => c.repeat(22);

/** A device's rules over its own store; `arrive` delivers one decrypted envelope. */
function device(members: Record<string, string[]>) {
  const store = new MemoryStore();
  const c: RuleContext = {
    store,
    me: 'alice',
    isMember: (chat, nick) => (chat.startsWith('dm:') ? nick === 'alice' || nick === chat.slice(3) : (members[chat] ?? []).includes(nick)),
  };
  const arrive = (from: string, chat: ChatId, plain: PlainInput, envId = id()) =>
    ingest(c, { ok: true, id: envId, ts: 1000 + n, from, chat, sentAt: plain.sentAt, plain: { v: 1, ...plain } as Plain });
  return { store, arrive };
}

const pinnedIds = async (store: MemoryStore, chat: ChatId) => (await pinnedMessages(store, chat)).map((m) => m.id);
const ROOM: ChatId = 'room:r1';
const MEMBERS = { [ROOM]: ['alice', 'bob', 'carol'] };

test('a pin and an unpin that cross resolve the same on every device: the later by sentAt, then by mid', async () => {
  const t = id();
  const text: PlainInput = { type: 'text', body: 'the address', sentAt: 10, mid: MID('t') };
  const changes: [string, PlainInput][] = [
    ['bob', { type: 'pin', target: t, op: 'pin', sentAt: 20, mid: MID('b') }],
    ['carol', { type: 'pin', target: t, op: 'unpin', sentAt: 20, mid: MID('a') }],
    ['carol', { type: 'pin', target: t, op: 'pin', sentAt: 15, mid: MID('z') }],
  ];
  const orders = [
    [0, 1, 2],
    [2, 1, 0],
    [1, 0, 2],
  ];
  const results: string[] = [];
  for (const order of orders) {
    const d = device(MEMBERS);
    // The target first on one device, last on another: changes that came first waited for it.
    if (order[0] === 0) await d.arrive('bob', ROOM, text, t);
    for (const i of order) await d.arrive(changes[i]![0], ROOM, changes[i]![1]);
    if (order[0] !== 0) await d.arrive('bob', ROOM, text, t);
    const m = await d.store.get(t);
    results.push(`${m?.pin?.op} by ${m?.pin?.by}; listed ${(await pinnedIds(d.store, ROOM)).join()}`);
  }
  assert.deepEqual(results, Array(3).fill(`pin by bob; listed ${t}`), 'bob’s pin (same sentAt, greater mid) holds everywhere');
});

test('a pin made after seeing another is stamped later than it, even on a device whose clock runs behind, and is listed first', async () => {
  const d = device(MEMBERS);
  const [t1, t2] = [id(), id()];
  await d.arrive('bob', ROOM, { type: 'text', body: 'one', sentAt: 10 }, t1);
  await d.arrive('bob', ROOM, { type: 'text', body: 'two', sentAt: 11 }, t2);
  assert.equal(await pinStamp(d.store, ROOM, 500), 500, 'nothing pinned yet: the clock');
  await d.arrive('bob', ROOM, { type: 'pin', target: t1, op: 'pin', sentAt: 1_800, mid: MID('z') });
  // This device's clock reads 1 000: bob's came stamped 800 ms ahead of it.
  const at = await pinStamp(d.store, ROOM, 1_000);
  assert.equal(at, 1_801);
  await d.arrive('alice', ROOM, { type: 'pin', target: t2, op: 'pin', sentAt: at, mid: MID('a') });
  assert.deepEqual(await pinnedIds(d.store, ROOM), [t2, t1], 'the newer pin first');
  assert.equal(await pinStamp(d.store, ROOM, 5_000), 5_000, 'a clock ahead of every pin is taken as it is');
});

test('a pin from someone not in the chat changes nothing; a pin of a message not here yet waits for it', async () => {
  const d = device(MEMBERS);
  const t = id();
  await d.arrive('bob', ROOM, { type: 'text', body: 'hello', sentAt: 10 }, t);
  assert.equal((await d.arrive('mallory', ROOM, { type: 'pin', target: t, op: 'pin', sentAt: 11, mid: MID('m') })).ignored, 'not a member');
  assert.deepEqual(await pinnedIds(d.store, ROOM), []);

  const later = id();
  const early = await d.arrive('carol', ROOM, { type: 'pin', target: later, op: 'pin', sentAt: 30, mid: MID('c') });
  assert.deepEqual(early.changed, [], 'nothing to show yet');
  assert.deepEqual(await pinnedIds(d.store, ROOM), []);
  await d.arrive('bob', ROOM, { type: 'text', body: 'arrives late', sentAt: 25 }, later);
  assert.deepEqual(await pinnedIds(d.store, ROOM), [later]);
  assert.equal((await d.store.get(later))?.pin?.by, 'carol');
});

test('a deleted message is never listed, whether its pin came before or after the deletion, nor a pin of another chat', async () => {
  for (const pinFirst of [true, false]) {
    const d = device(MEMBERS);
    const t = id();
    await d.arrive('bob', ROOM, { type: 'text', body: 'soon gone', sentAt: 10 }, t);
    const pin = (): ReturnType<typeof d.arrive> => d.arrive('carol', ROOM, { type: 'pin', target: t, op: 'pin', sentAt: 12, mid: MID('p') });
    const del = () => d.arrive('bob', ROOM, { type: 'delete', target: t, sentAt: 11 });
    if (pinFirst) {
      await pin();
      await del();
    } else {
      await del();
      assert.equal((await pin()).ignored, 'not a pinnable message');
    }
    assert.deepEqual(await pinnedIds(d.store, ROOM), [], `pin ${pinFirst ? 'before' : 'after'} the deletion`);
    assert.equal(JSON.stringify(await d.store.all()).includes('soon gone'), false);
  }
  const d = device(MEMBERS);
  const t = id();
  await d.arrive('bob', ROOM, { type: 'text', body: 'in the room', sentAt: 10 }, t);
  assert.equal((await d.arrive('bob', 'dm:bob', { type: 'pin', target: t, op: 'pin', sentAt: 11, mid: MID('x') })).ignored, 'target in another chat');
  assert.deepEqual(await pinnedIds(d.store, 'dm:bob'), []);
});

const texts = async (a: App, chat: ChatId) => (await a.conv.pinned(chat)).map((m) => m.body ?? '');

test('any room member pins; the pin reaches every member, the pinned text follows an edit, a deletion removes the pin, the newest pin is listed first', async () => {
  const [alice, bob, carol] = await Promise.all([register(server), register(server), register(server)]);
  const [A, B, C] = [await run(alice), await run(bob), await run(carol)];
  try {
    const room: ChatId = `room:${await roomOf(A, [B, C])}`;
    const first = await A.conv.sendText(room, 'meet at 10, Main St 5');
    const second = await C.conv.sendText(room, 'bring snacks');
    for (const x of [A, B, C])
      await until(
        async () => (await x.store.chat(room)).filter((m) => m.kind === 'text' && (m.state ?? 'sent') === 'sent').length === 2,
        `${x.nick}'s log`,
      );

    // bob, neither the sender nor the owner, pins alice's message; carol pins her own later.
    await B.conv.pin((await B.store.get(first.id))!);
    for (const x of [A, B, C]) await until(async () => (await texts(x, room)).length === 1, `${x.nick} sees the pin`);
    await C.conv.pin((await C.store.get(second.id))!);
    for (const x of [A, B, C])
      await until(async () => (await texts(x, room)).join('|') === 'bring snacks|meet at 10, Main St 5', `${x.nick} sees both pins, newest first`);
    assert.equal((await A.conv.pinned(room))[1]?.pin?.by, bob.m.nick);

    await A.conv.edit((await A.store.get(first.id))!, 'meet at 11, Main St 5');
    for (const x of [A, B, C]) await until(async () => (await texts(x, room)).includes('meet at 11, Main St 5'), `${x.nick} sees the edited pin`);

    await A.conv.unpin((await A.store.get(second.id))!);
    for (const x of [A, B, C]) await until(async () => (await texts(x, room)).join('|') === 'meet at 11, Main St 5', `${x.nick} sees the unpin`);

    await A.conv.deleteForEveryone((await A.store.get(first.id))!);
    for (const x of [A, B, C]) await until(async () => (await texts(x, room)).length === 0, `${x.nick}'s pin goes with the message`);
  } finally {
    await Promise.all([A.close(), B.close(), C.close()]);
  }
});

test('either person of a DM pins, and a message still on its way cannot be pinned', async () => {
  const [alice, bob] = await Promise.all([register(server), register(server)]);
  const [A, B] = [await run(alice), await run(bob)];
  try {
    const sent = await A.conv.sendText(`dm:${bob.m.nick}`, 'my number is 555-0100');
    assert.equal(A.conv.canPin(sent), false, 'queued: its id may still change');
    await assert.rejects(A.conv.pin(sent), { code: 'invalid' });
    await until(async () => (await B.store.get(sent.id)) !== undefined, 'bob has it');
    await B.conv.pin((await B.store.get(sent.id))!);
    await until(async () => (await texts(A, `dm:${bob.m.nick}`)).length === 1, 'alice sees bob’s pin');
    assert.deepEqual(await texts(B, `dm:${alice.m.nick}`), ['my number is 555-0100']);
  } finally {
    await Promise.all([A.close(), B.close()]);
  }
});
