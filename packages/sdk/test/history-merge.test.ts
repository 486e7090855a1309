/** Merging history from another device (conversation/merge.ts): no duplicates, and never back in time. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { makeUlid } from '@svc/protocol';
import { checkRecord, MemoryStore, mergeRecord, mergeRecords, randomBytes, type ChatMessage } from '../src/index.js';
import { fill, makeHistory } from './history-fixtures.js';

const T = 1_800_000_000_000;
const text = (o: Partial<ChatMessage> = {}): ChatMessage => ({
  id: makeUlid(T, randomBytes),
  chat: 'dm:bob_1',
  ts: T,
  from: 'bob_1',
  sentAt: T,
  kind: 'text',
  body: 'hi',
  ...o,
});

test('merging the same history twice adds nothing the second time', async () => {
  const store = new MemoryStore();
  const history = makeHistory(600);
  const first = await mergeRecords(store, 'alice', history);
  assert.deepEqual([first.added.length, first.changed.length, first.same], [600, 0, 0]);
  const again = await mergeRecords(store, 'alice', history);
  assert.deepEqual([again.added.length, again.changed.length, again.same], [0, 0, 600]);
  assert.equal((await store.all()).length, 600);
});

test('the same message under another envelope id (a retry) is not added twice', async () => {
  const store = new MemoryStore();
  const m = text({ mid: 'M'.repeat(22) });
  await fill(store, [m]);
  const r = await mergeRecords(store, 'alice', [{ ...m, id: makeUlid(T + 1, randomBytes) }]);
  assert.deepEqual([r.added.length, r.same], [0, 1]);
});

test('a local deletion wins over an older state; a deletion from the other device is applied', () => {
  const m = text({ reactions: { '👍': ['alice'] }, reactedAt: { 'alice 👍': T + 1 } });
  const deleted: ChatMessage = { ...m, deleted: true };
  delete deleted.body;
  delete deleted.reactions;
  delete deleted.reactedAt;
  assert.deepEqual(mergeRecord(deleted, m), deleted, 'stays deleted');
  assert.deepEqual(mergeRecord(m, deleted), deleted, 'becomes deleted');
});

test("the later edit wins, and each person's later reaction change wins", () => {
  const here = text({ body: 'new', editedAt: T + 10, reactions: { '👍': ['alice'] }, reactedAt: { 'alice 👍': T + 5, 'carol 🎉': T + 9 } });
  const there = text({
    id: here.id,
    body: 'old',
    editedAt: T + 2,
    reactions: { '🎉': ['carol'] },
    reactedAt: { 'alice 👍': T + 7, 'carol 🎉': T + 3 },
  });
  const m = mergeRecord(here, there);
  assert.equal(m.body, 'new');
  // alice removed 👍 later there (T+7 > T+5); carol's 🎉 removal here (T+9) is later than her add there.
  assert.deepEqual(m.reactions, {});
  assert.deepEqual(m.reactedAt, { 'alice 👍': T + 7, 'carol 🎉': T + 9 });
  const newer = mergeRecord(there, here);
  assert.equal(newer.body, 'new');
  assert.equal(newer.editedAt, T + 10);
});

test('receipts add up, and a message this device could not open is replaced by the readable one', () => {
  const mine = text({ from: 'alice', state: 'sent', delivered: ['bob_1'] });
  assert.deepEqual(mergeRecord(mine, { ...mine, delivered: ['carol'], read: ['bob_1'] }).delivered, ['bob_1', 'carol']);
  const broken: ChatMessage = {
    id: mine.id,
    chat: mine.chat,
    ts: T,
    from: 'alice',
    sentAt: T,
    kind: 'undecryptable',
    note: 'could not be decrypted',
  };
  const fixed = mergeRecord(broken, mine);
  assert.deepEqual([fixed.kind, fixed.body, fixed.note], ['text', 'hi', undefined]);
});

test('a record of the wrong shape is refused by the check every imported record passes', () => {
  const good = text();
  assert.deepEqual(checkRecord(good), good);
  for (const bad of [
    { ...good, id: 'x' },
    { ...good, chat: 'dm:BOB' },
    { ...good, state: 'queued' },
    { ...good, kind: 'html' },
    { ...good, reactions: JSON.parse('{"__proto__":["bob_1"]}') as unknown },
    { ...good, body: 5 },
  ]) {
    assert.equal(checkRecord(bad), null, JSON.stringify(bad).slice(0, 80));
  }
});
