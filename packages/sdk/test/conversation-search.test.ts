/**
 * Search over the decrypted history (conversation/search.ts): every word must occur, case and
 * accents do not matter, newest first, deleted and non-text records are never found, and a
 * forgotten chat leaves the index.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SearchIndex, type ChatMessage } from '../src/index.js';

const rec = (id: string, chat: 'dm:bob' | 'room:r1', ts: number, body: string, extra: Partial<ChatMessage> = {}): ChatMessage => ({
  id,
  chat,
  ts,
  from: 'bob',
  sentAt: ts,
  kind: 'text',
  body,
  ...extra,
});

test('every word of the query must occur; case and accents do not matter; newest first', () => {
  const ix = new SearchIndex();
  ix.put(rec('a', 'dm:bob', 1, 'Meet at the Café at noon'));
  ix.put(rec('b', 'room:r1', 2, 'the cafe is closed'));
  ix.put(rec('c', 'room:r1', 3, 'noon works'));
  assert.deepEqual(
    ix.search('CAFE').map((h) => h.id),
    ['b', 'a'],
  );
  assert.deepEqual(
    ix.search('cafe noon').map((h) => h.id),
    ['a'],
  );
  assert.deepEqual(ix.search('   '), []);
  assert.deepEqual(ix.search('tea'), []);
});

test('a deleted, edited away, undecryptable or forgotten record is not found', () => {
  const ix = new SearchIndex();
  ix.put(rec('a', 'dm:bob', 1, 'secret plan'));
  ix.put(rec('b', 'room:r1', 2, 'secret plan too'));
  ix.put(rec('c', 'room:r1', 3, '', { kind: 'undecryptable', note: 'secret' }));
  ix.put({ ...rec('a', 'dm:bob', 1, 'x'), deleted: true, body: undefined });
  assert.deepEqual(
    ix.search('secret').map((h) => h.id),
    ['b'],
  );
  ix.put(rec('b', 'room:r1', 2, 'nothing to see'));
  assert.deepEqual(ix.search('secret'), []);
  ix.put(rec('d', 'room:r1', 4, 'secret again'));
  ix.forgetChat('room:r1');
  assert.equal(ix.size, 0);
});

test('the limit keeps the newest hits', () => {
  const ix = new SearchIndex();
  for (let i = 0; i < 120; i++) ix.put(rec(`m${String(i).padStart(3, '0')}`, 'dm:bob', i, `hello number ${i}`));
  const hits = ix.search('hello', 50);
  assert.equal(hits.length, 50);
  assert.equal(hits[0]!.ts, 119);
  assert.equal(hits[49]!.ts, 70);
});
