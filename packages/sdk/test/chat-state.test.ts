/**
 * What a person keeps per chat (conversation/chat-state.ts, mentions.ts, drafts.ts): a mute that
 * follows them to their other devices through their private room and holds for everything but a
 * mention; `@nick` mentions; the unread count, the first unread message and "Mentioned", which a
 * read on another of their devices clears; drafts kept per chat and cleared on send.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  attachTransfer,
  ChatMutes,
  Drafts,
  insertMention,
  isTransferRoom,
  MemoryStore,
  mentionCandidates,
  mentionQuery,
  mentionsMe,
  moveReadMarker,
  MUTE_CHOICES,
  parseMentions,
  shouldNotify,
  unreadOf,
  unreadSince,
  type ChatId,
  type ChatMessage,
} from '../src/index.js';
import { loginDevice, register, startServer, type TestServer } from './server.js';
import { roomOf, run, until } from './room-apps.js';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

const MEMBERS = ['alice', 'bob', 'bob_2', 'carol'];

test('a mention is @ and a member’s nick between word boundaries; capitals fold, since no nick has one', () => {
  assert.deepEqual(parseMentions('@bob, see @carol.', MEMBERS), ['bob', 'carol']);
  assert.deepEqual(parseMentions('@Bob and @BOB_2!', MEMBERS), ['bob', 'bob_2']);
  assert.deepEqual(parseMentions('@bobby @dave (no members) @bob @bob', MEMBERS), ['bob']);
  assert.deepEqual(parseMentions('mail ann@bob or @@bob or x@carol', MEMBERS), []);
  assert.deepEqual(parseMentions('(@alice) "@carol" @bob_2_x', MEMBERS), ['alice', 'carol']);
  assert.deepEqual(parseMentions('@bobé', MEMBERS), [], 'a letter of any script continues the word');
  const base = { from: 'bob' } as const;
  assert.equal(mentionsMe({ ...base, body: 'hi @alice' }, 'alice'), true);
  assert.equal(mentionsMe({ ...base, body: 'hi @alice', deleted: true }, 'alice'), false);
  assert.equal(mentionsMe({ from: 'alice', body: 'note to self @alice' }, 'alice'), false);
});

test('the composer’s mention helpers: the @… being typed, the members it matches, and the text with one chosen', () => {
  assert.deepEqual(mentionQuery('hello @Bo'), { start: 6, query: 'bo' });
  assert.deepEqual(mentionQuery('hello @'), { start: 6, query: '' });
  assert.equal(mentionQuery('mail ann@bo'), null);
  assert.equal(mentionQuery('@bob done'), null, 'the caret has left the mention');
  assert.deepEqual(mentionQuery('@bob done', 4), { start: 0, query: 'bob' });
  assert.deepEqual(mentionCandidates('bo', MEMBERS, 'alice'), ['bob', 'bob_2']);
  assert.deepEqual(mentionCandidates('', MEMBERS, 'alice'), ['bob', 'bob_2', 'carol']);
  assert.deepEqual(insertMention('hi @bo how', 3, 6, 'bob_2'), { text: 'hi @bob_2 how', caret: 10 });
});

test('shouldNotify: a muted chat raises nothing but a mention of the reader; a mute that ran out holds no more', () => {
  const now = 1_000_000;
  const m = (body: string, o: Partial<ChatMessage> = {}): ChatMessage => ({
    id: 'x',
    chat: 'room:r',
    ts: 1,
    sentAt: 1,
    from: 'bob',
    kind: 'text',
    body,
    ...o,
  });
  const open = { mute: null };
  const always = { mute: { until: 'always' as const } };
  assert.equal(shouldNotify(m('hello'), open, 'alice', now), true);
  assert.equal(shouldNotify(m('hello'), always, 'alice', now), false);
  assert.equal(shouldNotify(m('hello @alice'), always, 'alice', now), true);
  assert.equal(shouldNotify(m('hello'), { mute: { until: now + 1 } }, 'alice', now), false);
  assert.equal(shouldNotify(m('hello'), { mute: { until: now - 1 } }, 'alice', now), true);
  assert.equal(shouldNotify(m('mine', { from: 'alice' }), open, 'alice', now), false);
  assert.equal(shouldNotify(m('', { kind: 'event' }), open, 'alice', now), false);
  assert.equal(shouldNotify(m('gone', { deleted: true }), open, 'alice', now), false);
  assert.deepEqual(
    MUTE_CHOICES.map((c) => c.label),
    ['Mute for 1 hour', 'Mute for 8 hours', 'Mute always'],
  );
});

test('a device added later learns the mutes that hold when it asks for history', async () => {
  const alice = await register(server);
  const bob = await register(server);
  const carol = await register(server);
  const A1 = await run(alice);
  let A3: Awaited<ReturnType<typeof run>> | null = null;
  try {
    const dmBob: ChatId = `dm:${bob.m.nick}`;
    const dmCarol: ChatId = `dm:${carol.m.nick}`;
    await A1.conv.setMute(dmBob, 'always');
    await A1.conv.setMute(dmCarol, Date.now() + 60 * 60_000);
    await A1.conv.setMute(dmCarol, 0);
    const set = await A1.conv.mute(dmBob);
    const alice3 = await loginDevice(server, alice.m.nick, alice.password, `dev-${alice.m.nick}-3`);
    A3 = await run(alice3);
    assert.equal(await A3.conv.muted(dmBob), false, 'a new device starts with no mutes');
    await attachTransfer(alice3.m, A3.conv).request();
    await until(async () => (await A3!.conv.mute(dmBob))?.mid === set?.mid, 'the new device takes the mute as it was set');
    assert.equal(await A3.conv.muted(dmBob), true);
    assert.deepEqual(await A3.conv.mute(dmBob), set, 'the same setting: same time and mid, so nothing new to the others');
    assert.equal(await A3.conv.muted(dmCarol), false, 'a mute that no longer holds is not sent');
  } finally {
    await Promise.all([A1.close(), A3?.close()]);
  }
});

test('a mute follows the person to their other device through their private room; racing changes end the same on both', async () => {
  const alice = await register(server);
  const bob = await register(server);
  const alice2 = await loginDevice(server, alice.m.nick, alice.password, `dev-${alice.m.nick}-2`);
  const [A1, A2, B] = [await run(alice), await run(alice2), await run(bob)];
  try {
    const dm: ChatId = `dm:${bob.m.nick}`;
    await A1.conv.setMute(dm, 'always');
    assert.equal(await A1.conv.muted(dm), true);
    await until(async () => (await A2.conv.mute(dm))?.until === 'always', 'the other device takes the mute');
    assert.equal(await A2.conv.muted(dm), true);
    assert.ok(
      alice.m.rooms.some((r) => isTransferRoom(r, alice.m.nick)),
      'it travelled in the private room',
    );
    assert.equal(await B.conv.mute(`dm:${alice.m.nick}`), null, 'the other person learns nothing');
    await assert.rejects(A1.conv.setMute(dm, -5), { code: 'invalid' });

    // Both devices change it at once: each takes the other's change only if it is the later.
    const until1h = Date.now() + MUTE_CHOICES[0].ms;
    const [s1, s2] = await Promise.all([A1.conv.setMute(dm, until1h), A2.conv.setMute(dm, 0)]);
    const later = s1.sentAt > s2.sentAt || (s1.sentAt === s2.sentAt && s1.mid > s2.mid) ? s1 : s2;
    for (const a of [A1, A2]) await until(async () => (await a.conv.mute(dm))?.mid === later.mid, `${a.d.deviceId} settles`);
    assert.equal(await A1.conv.muted(dm), later.until !== 0);

    // Muted always: a plain message does not notify, a mention does.
    await A1.conv.setMute(dm, 'always');
    await B.conv.sendText(`dm:${alice.m.nick}`, 'lunch?');
    await B.conv.sendText(`dm:${alice.m.nick}`, `@${alice.m.nick} lunch?`);
    await until(async () => (await A1.store.chat(dm)).length === 2, 'alice has both');
    const got = await A1.store.chat(dm);
    assert.deepEqual(await Promise.all(got.map((m) => A1.conv.shouldNotify(m))), [false, true]);
  } finally {
    await Promise.all([A1.close(), A2.close(), B.close()]);
  }
});

test('a mute set on a device whose clock runs behind still holds over the one it had from another device', async () => {
  // Each device's server-corrected clock is good to about a second: the other device's change came
  // stamped 800 ms ahead of this one's clock.
  const store = new MemoryStore();
  const sent: unknown[] = [];
  const link = {
    me: 'alice',
    now: () => 1_000_000,
    carrier: async () => 'room:devices' as ChatId,
    isCarrier: (chat: ChatId) => chat === 'room:devices',
    enqueue: async (_chat: ChatId, plain: unknown) => void sent.push(plain),
  };
  let mids = 0;
  const mutes = new ChatMutes(
    store,
    () => link,
    () => `m${++mids}`,
  );
  const dm: ChatId = 'dm:bob';
  const theirs = { type: 'mute', chat: dm, until: 0, sentAt: 1_000_800, mid: 'z' } as const;
  assert.equal(await mutes.handle({ from: 'alice', chat: 'room:devices', plain: { v: 1, ...theirs } }), true);
  const mine = await mutes.set(dm, 'always');
  assert.ok(mine.sentAt > theirs.sentAt, 'stamped after the one it had');
  assert.deepEqual(await mutes.get(dm), mine, 'it holds here');
  assert.equal((sent[0] as { sentAt: number }).sentAt, mine.sentAt, 'and goes to the other devices with that stamp');
  assert.equal(await mutes.handle({ from: 'alice', chat: 'room:devices', plain: { v: 1, ...theirs } }), false, 'the older one again changes nothing');
});

test('unread: the count, the first unread message and "Mentioned" until read; a read on one device clears it on the other', async () => {
  const [alice, bob, carol] = await Promise.all([register(server), register(server), register(server)]);
  const alice2 = await loginDevice(server, alice.m.nick, alice.password, `dev-${alice.m.nick}-2`);
  const [A1, A2, B, C] = [await run(alice), await run(alice2), await run(bob), await run(carol)];
  try {
    const room: ChatId = `room:${await roomOf(A1, [B, C])}`;
    await until(() => !!alice2.m.room(room.slice(5)), 'the other device lists the room');
    await A1.conv.sendText(room, 'who is coming?');
    const sent = [
      await B.conv.sendText(room, 'me'),
      await C.conv.sendText(room, `me too, @${alice.m.nick}`),
      await B.conv.sendText(room, 'and snacks'),
    ];
    for (const a of [A1, A2]) await until(async () => (await a.conv.unread(room)).count === 3, `${a.d.deviceId} counts 3`);
    // The first unread is the earliest in the log's order (the service's time, then the id): the
    // three went out together, so two may share a millisecond and then their ids decide.
    const firstInLog = (await A1.conv.store.chat(room)).find((m) => m.from !== alice.m.nick && m.kind === 'text')!.id;
    assert.ok(
      sent.some((m) => m.id === firstInLog),
      'the first unread is one of the three others sent',
    );
    assert.deepEqual(await A1.conv.unread(room), { count: 3, first: firstInLog, mentioned: true });
    assert.deepEqual(
      await A2.conv.unread(room),
      { count: 3, first: firstInLog, mentioned: true },
      'its own message is not unread on the other device',
    );

    await A1.conv.markRead(room);
    assert.deepEqual(await A1.conv.unread(room), { count: 0, first: null, mentioned: false });
    await until(async () => (await A2.conv.unread(room)).count === 0, 'the read reaches the other device');
    assert.equal((await A2.conv.unread(room)).mentioned, false);

    const next = await C.conv.sendText(room, 'see you');
    await until(async () => (await A2.conv.unread(room)).count === 1, 'a new one counts');
    assert.equal((await A2.conv.unread(room)).first, next.id);
  } finally {
    await Promise.all([A1.close(), A2.close(), B.close(), C.close()]);
  }
});

test('unreadSince counts from the records after the read marker, and hands them over for the log to open on', async () => {
  const store = new MemoryStore();
  const chat: ChatId = 'dm:bob';
  const at = (i: number, extra: Partial<ChatMessage> = {}): ChatMessage => ({
    id: `m${String(i).padStart(4, '0')}`,
    chat,
    ts: 1_000 * i,
    from: 'bob',
    sentAt: 1_000 * i,
    kind: 'text',
    body: `hello ${i}`,
    ...extra,
  });
  const ms = [at(1), at(2), at(3), at(4, { from: 'alice' }), at(5, { reported: 'read' }), at(6, { body: 'see @alice' }), at(7)];
  for (const m of ms) await store.put(m);
  await store.put({ ...at(8), chat: 'dm:carol' });
  const never = await unreadSince(store, chat, 'alice');
  assert.deepEqual([never.count, never.first, never.since.length], [5, 'm0001', 7], 'never read: every record counts from the start');
  await moveReadMarker(store, chat, { ts: 2_000, id: 'm0002' });
  const u = await unreadSince(store, chat, 'alice');
  assert.deepEqual(
    u.since.map((m) => m.id),
    ['m0003', 'm0004', 'm0005', 'm0006', 'm0007'],
  );
  assert.deepEqual([u.count, u.first, u.mentioned], [3, 'm0003', true], "alice's own and the one reported read do not count");
  assert.deepEqual(await unreadOf(store, chat, 'alice'), { count: 3, first: 'm0003', mentioned: true });
});

test('a draft stays per chat across a restart of the app and goes when the text is sent', async () => {
  const [alice, bob] = await Promise.all([register(server), register(server)]);
  const store = new MemoryStore();
  let A = await run(alice, store);
  try {
    const dm: ChatId = `dm:${bob.m.nick}`;
    await A.conv.drafts.set(dm, 'half a thought\nsecond line');
    await A.conv.drafts.set('room:AAAAAAAAAAAAAAAAAAAAAA', '   ');
    await A.close();
    A = await run(alice, MemoryStore.from(store.snapshot()));
    assert.equal(await A.conv.drafts.get(dm), 'half a thought\nsecond line');
    assert.equal(await A.conv.drafts.preview(dm), 'Draft: half a thought');
    assert.equal(await A.conv.drafts.get('room:AAAAAAAAAAAAAAAAAAAAAA'), '', 'white space is no draft');
    await A.conv.sendText(dm, 'half a thought, finished');
    assert.equal(await A.conv.drafts.get(dm), '');
    assert.equal(await new Drafts(A.store).preview(dm), null);
  } finally {
    await A.close();
  }
});
