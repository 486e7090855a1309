/** The memory of finished attachments (domain/attachment-cache.ts): a byte budget, least recently used out first. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AttachmentCache } from '../../src/domain/attachment-cache.js';

const sha = (c: number) => Buffer.alloc(32, c);
const file = (n: number, c = 1) => Buffer.alloc(n, c);

test('the cache holds at most its byte budget, dropping the least recently used file first', () => {
  const cache = new AttachmentCache(300);
  cache.put('a', sha(1), file(100));
  cache.put('b', sha(2), file(100));
  cache.put('c', sha(3), file(100));
  assert.ok(cache.get('a', sha(1)), 'a read makes a file the most recently used');
  cache.put('d', sha(4), file(100));
  assert.equal(cache.get('b', sha(2)), undefined);
  assert.deepEqual(
    ['a', 'c', 'd'].map((id, i) => cache.get(id, sha([1, 3, 4][i]!))?.length),
    [100, 100, 100],
  );
  assert.equal(cache.bytes, 300);
});

test('a file larger than the budget is not kept, and a budget of 0 keeps nothing', () => {
  const cache = new AttachmentCache(300);
  assert.equal(cache.reserve(301), false);
  cache.put('big', sha(1), file(301));
  assert.equal(cache.get('big', sha(1)), undefined);
  assert.equal(cache.bytes, 0);
  const none = new AttachmentCache(0);
  none.put('x', sha(1), file(1));
  assert.equal(none.get('x', sha(1)), undefined);
});

test('bytes kept under another SHA-256 are never served, and are dropped', () => {
  const cache = new AttachmentCache(300);
  cache.put('a', sha(1), file(10));
  assert.equal(cache.get('a', sha(2)), undefined);
  assert.equal(cache.get('a', sha(1)), undefined);
  assert.equal(cache.bytes, 0);
});

test('a file put again replaces the one kept, and a drop frees its bytes', () => {
  const cache = new AttachmentCache(300);
  cache.put('a', sha(1), file(10, 1));
  cache.put('a', sha(1), file(20, 2));
  assert.equal(cache.bytes, 20);
  assert.equal(cache.get('a', sha(1))?.[0], 2);
  cache.drop('a');
  cache.drop('a');
  assert.equal(cache.bytes, 0);
});

test('files read whole to be kept at once hold at most the budget; a release makes room again', () => {
  const cache = new AttachmentCache(300);
  assert.equal(cache.reserve(200), true);
  assert.equal(cache.reserve(200), false, 'a second large file at the same time streams without being kept');
  assert.equal(cache.reserve(100), true);
  cache.release(200);
  assert.equal(cache.reserve(200), true);
  assert.equal(new AttachmentCache(0).reserve(1), false);
});
