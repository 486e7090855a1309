/**
 * The rules every receiving client enforces (conversation/rules.ts), played as a hostile peer or
 * server would: edits and deletions only by the sender and only in the same chat, reactions and
 * receipts from non-members ignored, actions that arrive before their target applied when it
 * arrives, second copies dropped, unknown types and malformed plaintexts never shown as text.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ingest, MemoryStore, quotedRecord, UNKNOWN_TEXT, type ChatId, type Plain, type PlainInput, type RuleContext } from '../src/index.js';

let n = 0;
const id = (): string => `01JD${String(++n).padStart(22, '0')}`;
const MID = (c: string) => c.repeat(22);

function world(members: Record<string, string[]> = {}) {
  const store = new MemoryStore();
  const c: RuleContext = {
    store,
    me: 'alice',
    isMember: (chat, nick) => (chat.startsWith('dm:') ? nick === 'alice' || nick === chat.slice(3) : (members[chat] ?? []).includes(nick)),
  };
  const arrive = (from: string, chat: ChatId, plain: PlainInput, envId = id()) =>
    ingest(c, {
      ok: true,
      id: envId,
      ts: 1000 + n,
      from,
      chat,
      sentAt: plain.sentAt,
      plain: { v: 1, ...plain } as Plain,
      ...(plain.type === 'text' ? { body: plain.body } : {}),
    });
  return { store, c, arrive };
}

test('an edit applies only when its sender sent the target, in the same chat; a later edit wins over an older one', async () => {
  const { store, arrive } = world({ 'room:r1': ['alice', 'bob', 'carol'] });
  const t = id();
  await arrive('bob', 'room:r1', { type: 'text', body: 'original', sentAt: 10 }, t);
  assert.equal((await arrive('carol', 'room:r1', { type: 'edit', target: t, body: 'carol was here', sentAt: 11 })).ignored, 'edit by someone else');
  assert.equal((await arrive('bob', 'dm:bob', { type: 'edit', target: t, body: 'from another chat', sentAt: 12 })).ignored, 'target in another chat');
  assert.equal((await store.get(t))?.body, 'original');
  await arrive('bob', 'room:r1', { type: 'edit', target: t, body: 'second edit', sentAt: 20 });
  assert.equal((await arrive('bob', 'room:r1', { type: 'edit', target: t, body: 'first edit, late', sentAt: 15 })).ignored, 'older edit');
  const m = await store.get(t);
  assert.deepEqual([m?.body, m?.editedAt], ['second edit', 20]);
});

test('a delete for everyone applies only from the sender; the text is gone from the store and no later edit brings it back', async () => {
  const { store, arrive } = world({ 'room:r1': ['alice', 'bob', 'carol'] });
  const t = id();
  await arrive('bob', 'room:r1', { type: 'text', body: 'secret words', sentAt: 10 }, t);
  await arrive('bob', 'room:r1', { type: 'reaction', target: t, emoji: '👍', op: 'add', sentAt: 11 });
  assert.equal((await arrive('carol', 'room:r1', { type: 'delete', target: t, sentAt: 12 })).ignored, 'delete by someone else');
  assert.equal((await store.get(t))?.body, 'secret words');
  await arrive('bob', 'room:r1', { type: 'delete', target: t, sentAt: 13 });
  const m = await store.get(t);
  assert.equal(m?.deleted, true);
  assert.equal(m?.body, undefined);
  assert.equal(m?.reactions, undefined);
  assert.ok(!JSON.stringify(await store.all()).includes('secret words'), 'the text is gone from storage');
  assert.equal((await arrive('bob', 'room:r1', { type: 'edit', target: t, body: 'back again', sentAt: 14 })).ignored, 'not an editable message');
});

test('a reaction or receipt from someone not in the chat is ignored; members add and remove their own reactions', async () => {
  const { store, arrive } = world({ 'room:r1': ['alice', 'bob'] });
  const mine = id();
  await arrive('alice', 'room:r1', { type: 'text', body: 'mine', sentAt: 10 }, mine);
  assert.equal((await arrive('mallory', 'room:r1', { type: 'reaction', target: mine, emoji: '😈', op: 'add', sentAt: 11 })).ignored, 'not a member');
  assert.equal((await arrive('mallory', 'room:r1', { type: 'receipt', ids: [mine], status: 'read', sentAt: 11 })).ignored, 'not a member');
  await arrive('bob', 'room:r1', { type: 'reaction', target: mine, emoji: '👍', op: 'add', sentAt: 12 });
  await arrive('alice', 'room:r1', { type: 'reaction', target: mine, emoji: '👍', op: 'add', sentAt: 13 });
  assert.deepEqual((await store.get(mine))?.reactions, { '👍': ['alice', 'bob'] });
  await arrive('bob', 'room:r1', { type: 'reaction', target: mine, emoji: '👍', op: 'remove', sentAt: 14 });
  assert.equal(
    (await arrive('bob', 'room:r1', { type: 'reaction', target: mine, emoji: '👍', op: 'add', sentAt: 12 })).ignored,
    'older reaction',
    'a replayed older add does not undo the removal',
  );
  assert.deepEqual((await store.get(mine))?.reactions, { '👍': ['alice'] });
  await arrive('bob', 'room:r1', { type: 'receipt', ids: [mine], status: 'read', sentAt: 15 });
  const m = await store.get(mine);
  assert.deepEqual([m?.read, m?.delivered], [['bob'], undefined]);
});

test('a receipt only marks this account’s own messages', async () => {
  const { store, arrive } = world({ 'room:r1': ['alice', 'bob', 'carol'] });
  const bobs = id();
  await arrive('bob', 'room:r1', { type: 'text', body: 'bob says', sentAt: 10 }, bobs);
  assert.equal(
    (await arrive('carol', 'room:r1', { type: 'receipt', ids: [bobs], status: 'read', sentAt: 11 })).ignored,
    'receipt for a message not mine',
  );
  assert.equal((await store.get(bobs))?.read, undefined);
});

test('an edit, reaction or delete that arrives before its target waits and applies when the target arrives', async () => {
  const { store, arrive } = world({ 'room:r1': ['alice', 'bob', 'carol'] });
  const t = id();
  const early = await arrive('bob', 'room:r1', { type: 'edit', target: t, body: 'edited early', sentAt: 20 });
  assert.deepEqual([early.added, early.changed], [undefined, []]);
  await arrive('carol', 'room:r1', { type: 'reaction', target: t, emoji: '🎉', op: 'add', sentAt: 21 });
  await arrive('carol', 'room:r1', { type: 'edit', target: t, body: 'carol cannot', sentAt: 22 });
  const r = await arrive('bob', 'room:r1', { type: 'text', body: 'original', sentAt: 10 }, t);
  assert.equal(r.added?.body, 'edited early');
  const m = await store.get(t);
  assert.deepEqual([m?.body, m?.editedAt, m?.reactions], ['edited early', 20, { '🎉': ['carol'] }]);

  const d = id();
  await arrive('bob', 'room:r1', { type: 'delete', target: d, sentAt: 30 });
  const late = await arrive('bob', 'room:r1', { type: 'text', body: 'deleted before it came', sentAt: 25 }, d);
  assert.equal(late.added?.deleted, true);
  assert.equal(late.added?.body, undefined);
});

test('a second copy of a message from the same sender (same plaintext id, new envelope id) is dropped; the same mid from another sender is not', async () => {
  const { store, arrive } = world({ 'room:r1': ['alice', 'bob', 'carol'] });
  const first = await arrive('bob', 'room:r1', { type: 'text', body: 'once', sentAt: 10, mid: MID('b') });
  assert.ok(first.added);
  const again = await arrive('bob', 'room:r1', { type: 'text', body: 'once', sentAt: 10, mid: MID('b') });
  assert.equal(again.ignored, 'second copy');
  assert.ok((await arrive('carol', 'room:r1', { type: 'text', body: 'once', sentAt: 10, mid: MID('b') })).added);
  const envId = again.changed[0]?.id;
  assert.ok(envId);
  assert.equal((await arrive('bob', 'room:r1', { type: 'text', body: 'once', sentAt: 10, mid: MID('b') }, envId)).ignored, 'already stored');
  assert.equal((await store.chat('room:r1')).length, 2);
});

test('a second copy under a later envelope id (a renewed retry) moves the record to that id: the sender’s edit and reactions to it then apply', async () => {
  const { store, arrive } = world({ 'room:r1': ['alice', 'bob', 'carol'] });
  const firstId = id();
  const laterId = id();
  const first = await arrive('bob', 'room:r1', { type: 'text', body: 'sent twice', sentAt: 10, mid: MID('c') }, firstId);
  assert.ok(first.added);
  // An edit the sender made after its retry names the id it now knows; it may come first.
  const edit = await arrive('bob', 'room:r1', { type: 'edit', target: laterId, body: 'sent twice, edited', sentAt: 12, mid: MID('d') });
  assert.deepEqual(edit.changed, []);

  const again = await arrive('bob', 'room:r1', { type: 'text', body: 'sent twice', sentAt: 10, mid: MID('c') }, laterId);
  assert.equal(again.ignored, 'second copy');
  assert.equal(again.added, undefined, 'not shown as a new message');
  assert.deepEqual(again.removed, [firstId]);
  assert.equal(again.changed[0]?.id, laterId);
  assert.equal(await store.get(firstId), undefined);
  const moved = await store.get(laterId);
  assert.equal(moved?.body, 'sent twice, edited', 'the edit that waited for the new id applied');
  assert.equal(moved?.ts, first.added.ts, 'it keeps its place in the chat');
  assert.equal(await store.idForMid('bob', MID('c')), laterId);

  // The first copy again (a replay the ack missed) is dropped and moves nothing back.
  const replay = await arrive('bob', 'room:r1', { type: 'text', body: 'sent twice', sentAt: 10, mid: MID('c') }, firstId);
  assert.equal(replay.ignored, 'second copy');
  assert.deepEqual(replay.changed, []);
  assert.ok(await store.get(laterId));
  assert.equal((await store.chat('room:r1')).length, 1);

  const reaction = await arrive('carol', 'room:r1', { type: 'reaction', target: laterId, emoji: '👍', op: 'add', sentAt: 13, mid: MID('e') });
  assert.deepEqual(reaction.changed[0]?.reactions, { '👍': ['carol'] });
});

test('an unknown type shows a neutral placeholder; an envelope that does not open is an error entry, never text', async () => {
  const { c, store } = world();
  const u = await ingest(c, {
    ok: true,
    id: id(),
    ts: 5,
    from: 'bob',
    chat: 'dm:bob',
    sentAt: 5,
    plain: { v: 2, type: 'unknown', original: 'poll v2', sentAt: 5 },
  });
  assert.deepEqual([u.added?.kind, u.added?.note, u.added?.body], ['unknown', UNKNOWN_TEXT, undefined]);
  const bad = await ingest(c, { ok: false, id: id(), ts: 6, from: 'bob', chat: 'dm:bob', reason: 'decrypt_failed' });
  assert.equal(bad.added?.kind, 'undecryptable');
  assert.match(bad.added?.note ?? '', /could not be decrypted/);
  assert.equal((await store.chat('dm:bob')).length, 2);
});

test('a reply shows a quote only from its own chat: the id of a message of another chat reads as not found, as a missing one does', async () => {
  const { store, arrive } = world({ 'room:r1': ['alice', 'bob', 'carol'] });
  const secret = id();
  await arrive('bob', 'dm:bob', { type: 'text', body: 'between alice and bob', sentAt: 1 }, secret);
  const inRoom = id();
  await arrive('bob', 'room:r1', { type: 'text', body: 'said in the room', sentAt: 2 }, inRoom);
  const own = id();
  await arrive('carol', 'dm:carol', { type: 'text', body: 'carol speaks', sentAt: 3 }, own);
  for (const target of [secret, inRoom, own]) {
    const r = await arrive('carol', 'dm:carol', { type: 'text', body: 'look', sentAt: 4, replyTo: target });
    assert.equal(r.added?.replyTo, target, 'the reply is kept as sent');
  }
  assert.equal(await quotedRecord(store, 'dm:carol', secret), undefined, "another DM's text is not shown");
  assert.equal(await quotedRecord(store, 'dm:carol', inRoom), undefined, "a room's text is not shown in a DM");
  assert.equal(await quotedRecord(store, 'dm:carol', id()), undefined, 'a missing target');
  assert.equal((await quotedRecord(store, 'dm:carol', own))?.body, 'carol speaks', 'the same chat quotes');
  assert.equal((await quotedRecord(store, 'dm:bob', secret))?.body, 'between alice and bob');
  assert.equal((await quotedRecord(store, 'room:r1', inRoom))?.body, 'said in the room');
});

test('a reply keeps the id of the message it quotes', async () => {
  const { arrive } = world();
  const t = id();
  await arrive('bob', 'dm:bob', { type: 'text', body: 'question?', sentAt: 1 }, t);
  const r = await arrive('bob', 'dm:bob', { type: 'text', body: 'and more', sentAt: 2, replyTo: t });
  assert.equal(r.added?.replyTo, t);
});
