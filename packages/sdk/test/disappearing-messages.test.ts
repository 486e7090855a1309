/**
 * Disappearing messages (conversation/disappearing.ts): any member sets the chat's timer and every
 * member sees the same log line and the same setting whatever order racing changes came in; a
 * message sent while it is on carries it and expires from when each reader first saw it (from
 * sending, for the sender); an expired message is cut everywhere it was kept, also on a device
 * that was closed at that moment (at its next start, before anything is shown), and never leaves
 * in an export or a transfer.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  chatTimer,
  expireDue,
  nextExpiry,
  trackExpiry,
  exportHistory,
  ingest,
  isSettled,
  mergeRecords,
  MemoryStore,
  openExport,
  SearchIndex,
  TIMER_CHOICES,
  timerText,
  type ChatId,
  type ChatMessage,
  type Plain,
  type PlainInput,
  type RuleContext,
} from '../src/index.js';
import { recordsFromJson, recordsJson } from '../src/conversation/history-codec.js';
import { register, sleep, startServer, type TestServer } from './server.js';
import { run, until, type App } from './room-apps.js';

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

function device(members: string[]) {
  const store = new MemoryStore();
  const c: RuleContext = { store, me: 'alice', isMember: (_chat, nick) => members.includes(nick) };
  const arrive = (from: string, chat: ChatId, plain: PlainInput, envId = id()) =>
    ingest(c, { ok: true, id: envId, ts: 1000 + n, from, chat, sentAt: plain.sentAt, plain: { v: 1, ...plain } as Plain });
  return { store, arrive };
}

test('the choices are Signal’s, and the log line says who set what', () => {
  assert.deepEqual(
    TIMER_CHOICES.map((c) => c.label),
    ['Off', '30 seconds', '5 minutes', '1 hour', '8 hours', '1 day', '1 week', '4 weeks'],
  );
  assert.deepEqual(
    TIMER_CHOICES.map((c) => c.seconds),
    [0, 30, 300, 3600, 28800, 86400, 604800, 2419200],
  );
  assert.equal(timerText('carol', 86400), 'carol set disappearing messages to 1 day');
  assert.equal(timerText('carol', 0), 'carol turned off disappearing messages');
});

test('racing timer changes end at the same setting on every device (the later by sentAt, then mid); a non-member changes nothing', async () => {
  const room: ChatId = 'room:r1';
  const changes: [string, PlainInput][] = [
    ['bob', { type: 'timer', seconds: 3600, sentAt: 50, mid: MID('a') }],
    ['carol', { type: 'timer', seconds: 30, sentAt: 50, mid: MID('c') }],
    ['bob', { type: 'timer', seconds: 0, sentAt: 40, mid: MID('z') }],
  ];
  const settings: string[] = [];
  for (const order of [
    [0, 1, 2],
    [2, 1, 0],
    [1, 2, 0],
  ]) {
    const d = device(['alice', 'bob', 'carol']);
    for (const i of order) await d.arrive(changes[i]![0], room, changes[i]![1]);
    const t = await chatTimer(d.store, room);
    settings.push(`${t.seconds} by ${t.by}`);
    const lines = (await d.store.chat(room)).map((m) => m.note).sort();
    assert.deepEqual(lines, [
      'bob set disappearing messages to 1 hour',
      'bob turned off disappearing messages',
      'carol set disappearing messages to 30 seconds',
    ]);
  }
  assert.deepEqual(settings, Array(3).fill('30 by carol'));
  const d = device(['alice', 'bob']);
  assert.equal((await d.arrive('mallory', room, { type: 'timer', seconds: 30, sentAt: 60, mid: MID('m') })).ignored, 'not a member');
  assert.equal((await chatTimer(d.store, room)).seconds, 0);
});

test('a merged record whose timer ran out is not taken; one whose clock runs keeps its deadline', async () => {
  const now = 1_000_000;
  const base = { chat: 'dm:bob' as ChatId, from: 'bob', kind: 'text' as const, ts: 1, sentAt: 1, expire: 30 };
  const gone: ChatMessage = { ...base, id: id(), body: 'seen long ago', seenAt: now - 31_000 };
  const running: ChatMessage = { ...base, id: id(), body: 'seen just now', seenAt: now - 1_000 };
  const unseen: ChatMessage = { ...base, id: id(), body: 'not seen yet' };
  const store = new MemoryStore();
  const r = await mergeRecords(store, 'alice', [gone, running, unseen], now);
  assert.deepEqual(
    r.added.map((m) => m.body),
    ['seen just now', 'not seen yet'],
  );
  assert.equal((await store.get(running.id))?.seenAt, now - 1_000);
  assert.equal(isSettled({ ...gone }), false, 'an export or transfer leaves it out');
});

test('a read receipt of the account’s own, from another of its devices, marks the message read and starts its clock here at that time', async () => {
  const d = device(['alice', 'bob']);
  const t = id();
  await d.arrive('bob', 'dm:bob', { type: 'text', body: 'ticking', expire: 300, sentAt: 100, mid: MID('t') }, t);
  assert.equal((await d.store.get(t))?.seenAt, undefined);
  await d.arrive('alice', 'dm:bob', { type: 'receipt', ids: [t], status: 'read', sentAt: 500 });
  const m = await d.store.get(t);
  assert.deepEqual([m?.reported, m?.seenAt], ['read', 500]);
  assert.equal(
    (await d.arrive('alice', 'dm:bob', { type: 'receipt', ids: [t], status: 'read', sentAt: 900 })).ignored,
    'already reported',
    'a later one changes nothing',
  );
  assert.equal(
    (await d.arrive('alice', 'dm:bob', { type: 'receipt', ids: [t], status: 'read', sentAt: 400 })).changed[0]?.seenAt,
    400,
    'an earlier one moves the start back',
  );
});

test('history records (transfer and file) carry the timer, the time first seen, the pin and the timer’s log line; malformed ones are left out', () => {
  const base = { chat: 'room:AAAAAAAAAAAAAAAAAAAAAA' as ChatId, from: 'bob', ts: 5, sentAt: 4 };
  const recs: ChatMessage[] = [
    { ...base, id: id(), kind: 'text', body: 'x', expire: 3600, seenAt: 6, pin: { op: 'pin', by: 'carol', sentAt: 7, mid: MID('p') } },
    {
      ...base,
      id: id(),
      kind: 'event',
      event: { what: 'timer', nicks: ['bob'], seconds: 3600 },
      note: 'bob set disappearing messages to 1 hour',
      mid: MID('q'),
    },
  ];
  assert.deepEqual(recordsFromJson(JSON.parse(recordsJson(recs))), { records: recs, dropped: 0 });
  const bad: ChatMessage[] = [
    { ...recs[0]!, expire: 31 },
    { ...recs[0]!, pin: { op: 'pin', by: 'Carol', sentAt: 7, mid: MID('p') } },
    { ...recs[1]!, event: { what: 'timer', nicks: ['bob'], seconds: 7 } },
    { ...recs[1]!, event: { what: 'joined', nicks: ['bob'], seconds: 30 } },
  ];
  assert.deepEqual(recordsFromJson(JSON.parse(recordsJson(bad)))?.dropped, 4);
});

test('expireDue cuts only what is due, reports the attachments whose copies go, and drops the actions waiting for them', async () => {
  const store = new MemoryStore();
  const chat: ChatId = 'dm:bob';
  const attachment = {
    type: 'photo' as const,
    id: 'A'.repeat(22),
    key: 'K'.repeat(43),
    sha256: 'S'.repeat(43),
    size: 100,
    plainSize: 72,
    name: 'p.jpg',
    mime: 'image/jpeg',
  };
  const due: ChatMessage = {
    id: id(),
    chat,
    ts: 1,
    sentAt: 1,
    from: 'bob',
    kind: 'text',
    body: 'caption',
    attachment,
    expire: 30,
    seenAt: 1_000,
    reactions: { '👍': ['alice'] },
  };
  const later: ChatMessage = { id: id(), chat, ts: 2, sentAt: 2, from: 'bob', kind: 'text', body: 'later', expire: 300, seenAt: 1_000 };
  for (const m of [due, later]) await store.put(m);
  await trackExpiry(store, [due, later]);
  await store.addPending({
    id: id(),
    target: due.id,
    chat,
    from: 'bob',
    ts: 3,
    at: 3,
    plain: { v: 1, type: 'edit', target: due.id, body: 'edited', sentAt: 3 },
  });
  assert.deepEqual(await nextExpiry(store), { id: due.id, at: 31_000 });
  assert.deepEqual((await expireDue(store, 30_999)).records, [], 'not yet');
  const r = await expireDue(store, 31_000);
  assert.deepEqual([r.records.map((m) => m.id), r.attachments], [[due.id], [attachment.id]]);
  const t = (await store.get(due.id))!;
  assert.deepEqual([t.expired, t.deleted, t.body, t.attachment, t.reactions], [true, true, undefined, undefined, undefined]);
  assert.equal(await store.countPending(), 0);
  assert.deepEqual(await nextExpiry(store), { id: later.id, at: 301_000 });
  assert.equal((await store.get(later.id))?.body, 'later');
});

const textOf = (a: App, mid: string) => async () => (await a.store.all()).find((m) => m.mid === mid);

test('a message under the 30-second timer expires from when each reader saw it: cut on the open device, and on a closed one at its next start before anything shows', async () => {
  const [alice, bob] = await Promise.all([register(server), register(server)]);
  const A = await run(alice);
  let B = await run(bob);
  try {
    const dmA: ChatId = `dm:${bob.m.nick}`;
    const dmB: ChatId = `dm:${alice.m.nick}`;
    const line = await A.conv.setTimer(dmA, 30);
    assert.equal(line?.note, `${alice.m.nick} set disappearing messages to 30 seconds`);
    await until(async () => (await B.conv.timer(dmB)).seconds === 30, 'bob’s chat takes the timer');
    assert.ok((await B.store.chat(dmB)).some((m) => m.note === `${alice.m.nick} set disappearing messages to 30 seconds`));
    assert.equal(await A.conv.setTimer(dmA, 30), null, 'the same value again sends nothing');
    await assert.rejects(A.conv.setTimer(dmA, 45), { code: 'invalid' });

    const sent = await A.conv.sendText(dmA, 'the door code is 4711');
    assert.deepEqual([sent.expire, sent.seenAt], [30, sent.sentAt], 'the sender’s clock runs from sending');
    const unseen = await A.conv.sendText(dmA, 'read me later');
    await until(async () => (await B.conv.unread(dmB)).count === 2, 'bob has both');
    const got = (await B.store.get(sent.id))!;
    assert.deepEqual([got.expire, got.seenAt], [30, undefined], 'a reader’s clock has not started');
    assert.equal(await B.conv.nextExpiry(), null);
    await B.conv.react(got, '👍');
    await until(async () => (await A.store.get(sent.id))?.reactions?.['👍'] !== undefined, 'alice has the reaction');

    // bob sees the first message only, then closes the app.
    await B.conv.markSeen(dmB, [got]);
    const seenAt = (await B.store.get(sent.id))!.seenAt!;
    assert.deepEqual(await B.conv.nextExpiry(), { id: sent.id, at: seenAt + 30_000 });
    await B.close();
    const bobStore = B.store;

    // Before the deadline an export carries the timer and both clocks' start.
    const before = await openExport(alice.m, (await exportHistory(alice.m, A.store)).file);
    assert.deepEqual(
      before.records.filter((m) => m.id === sent.id).map((m) => [m.expire, m.seenAt]),
      [[30, sent.sentAt]],
    );

    await sleep(Math.max(0, seenAt + 30_000 - Date.now()) + 1_500);

    // Due, not cut yet: no export carries it already.
    const due = await openExport(alice.m, (await exportHistory(alice.m, A.store)).file);
    assert.equal(
      due.records.some((m) => m.id === sent.id),
      false,
    );
    const index = new SearchIndex();
    for (const m of await A.store.all()) index.put(m);
    assert.equal(index.search('door code').length, 1);
    const cut = await A.conv.expireDue();
    assert.deepEqual(cut.records.map((m) => m.id).sort(), [sent.id, unseen.id].sort(), 'on the sender’s side both clocks ran from sending');
    for (const m of cut.records) index.put(m);
    assert.equal(index.search('door code').length, 0, 'the search index drops it');
    const tomb = (await A.store.get(sent.id))!;
    assert.deepEqual([tomb.expired, tomb.body, tomb.reactions, tomb.pin], [true, undefined, undefined, undefined]);
    assert.ok(!JSON.stringify(await A.store.all()).includes('4711'), 'the text is gone from alice’s store');

    // bob's app starts again: the message goes before anything is shown; the unseen one stays.
    B = await run(bob, bobStore);
    assert.ok(!JSON.stringify(await B.store.all()).includes('4711'), 'cut at the start');
    assert.equal((await B.store.get(sent.id))?.expired, true);
    assert.equal((await B.store.get(unseen.id))?.body, 'read me later', 'its clock never started on bob’s side');
    assert.equal((await B.conv.unread(dmB)).count, 1, 'the expired one no longer counts as unread');

    // bob turns it off: alice sees the line, and new messages carry no timer.
    await B.conv.setTimer(dmB, 0);
    await until(async () => (await A.conv.timer(dmA)).seconds === 0, 'alice’s chat takes it');
    assert.ok((await A.store.chat(dmA)).some((m) => m.note === `${bob.m.nick} turned off disappearing messages`));
    const plain = await A.conv.sendText(dmA, 'this one stays');
    assert.equal(plain.expire, undefined);
    await until(async () => (await textOf(B, plain.mid!)()) !== undefined, 'bob has it');
    assert.equal((await B.store.get(plain.id))?.expire, undefined);
  } finally {
    await Promise.all([A.close(), B.close()]);
  }
});
