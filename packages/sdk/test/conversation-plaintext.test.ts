/**
 * The plaintext types of wire/plaintext.ts: each round-trips in its fixed form and pads to
 * 256-byte blocks like a text; an unknown type or a newer version decodes to a placeholder; a
 * known type with a field of the wrong shape is refused (the app shows it as a decryption error).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodePlaintext, encodePlaintext, MAX_PADDED_BYTES, PAD_BLOCK, textRoom, utf8, type PlainInput } from '../src/index.js';

const ID = '01JD0000000000000000000000';
const MID = 'AAAAAAAAAAAAAAAAAAAAAA';
const raw = (o: unknown): Uint8Array => {
  const j = utf8(JSON.stringify(o));
  const out = new Uint8Array(Math.ceil(j.length / PAD_BLOCK) * PAD_BLOCK || PAD_BLOCK);
  out.set(j);
  return out;
};

const SAMPLES: PlainInput[] = [
  { type: 'text', body: 'hello', sentAt: 1, mid: MID },
  { type: 'text', body: 'a reply', sentAt: 2, mid: MID, replyTo: ID },
  { type: 'reaction', target: ID, emoji: '👍', op: 'add', sentAt: 3, mid: MID },
  { type: 'reaction', target: ID, emoji: '❤️', op: 'remove', sentAt: 4 },
  { type: 'edit', target: ID, body: 'new text', sentAt: 5, mid: MID },
  { type: 'delete', target: ID, sentAt: 6, mid: MID },
  { type: 'receipt', ids: [ID], status: 'read', sentAt: 7, mid: MID },
  { type: 'receipt', ids: [ID, '01JD0000000000000000000001'], status: 'delivered', sentAt: 8 },
  { type: 'text', body: 'gone soon', expire: 30, sentAt: 9, mid: MID },
  { type: 'pin', target: ID, op: 'pin', sentAt: 10, mid: MID },
  { type: 'pin', target: ID, op: 'unpin', sentAt: 11, mid: MID },
  { type: 'timer', seconds: 86400, sentAt: 12, mid: MID },
  { type: 'timer', seconds: 0, sentAt: 13, mid: MID },
  { type: 'mute', chat: 'dm:bob', until: 1_700_000_000_000, sentAt: 14, mid: MID },
  { type: 'mute', chat: `room:${'A'.repeat(22)}`, until: 'always', sentAt: 15, mid: MID },
  { type: 'mute', chat: 'dm:bob', until: 0, sentAt: 16, mid: MID },
];

test('every plaintext type round-trips and pads to a multiple of 256 bytes like a text', () => {
  for (const p of SAMPLES) {
    const bytes = encodePlaintext(p);
    assert.equal(bytes.length % PAD_BLOCK, 0, p.type);
    assert.equal(bytes.length, PAD_BLOCK, `${p.type}: a short message of any type fills one block`);
    assert.deepEqual(decodePlaintext(bytes), { v: 1, ...p });
  }
});

test('the field order is fixed: v, type, the type’s fields, sentAt, mid', () => {
  const json = new TextDecoder().decode(encodePlaintext({ mid: MID, sentAt: 9, replyTo: ID, body: 'x', type: 'text' })).replace(/\0+$/, '');
  assert.equal(json, `{"v":1,"type":"text","body":"x","replyTo":"${ID}","sentAt":9,"mid":"${MID}"}`);
});

test('a message sent under a disappearing timer carries `expire` after its own fields, before sentAt', () => {
  const json = new TextDecoder().decode(encodePlaintext({ type: 'text', body: 'x', expire: 300, sentAt: 9, mid: MID })).replace(/\0+$/, '');
  assert.equal(json, `{"v":1,"type":"text","body":"x","expire":300,"sentAt":9,"mid":"${MID}"}`);
});

test('pin, timer and mute are checked field by field; `expire` only on a message, with a timer choice other than off', () => {
  const bad = [
    { v: 1, type: 'pin', target: 'nope', op: 'pin', sentAt: 1 },
    { v: 1, type: 'pin', target: ID, op: 'toggle', sentAt: 1 },
    { v: 1, type: 'timer', seconds: 31, sentAt: 1 },
    { v: 1, type: 'timer', seconds: '30', sentAt: 1 },
    { v: 1, type: 'timer', sentAt: 1 },
    { v: 1, type: 'mute', chat: 'bob', until: 0, sentAt: 1 },
    { v: 1, type: 'mute', chat: 'dm:Bob', until: 0, sentAt: 1 },
    { v: 1, type: 'mute', chat: 'dm:bob', until: -1, sentAt: 1 },
    { v: 1, type: 'mute', chat: 'dm:bob', until: 'forever', sentAt: 1 },
    { v: 1, type: 'text', body: 'x', expire: 0, sentAt: 1 },
    { v: 1, type: 'text', body: 'x', expire: 45, sentAt: 1 },
    { v: 1, type: 'edit', target: ID, body: 'x', expire: 30, sentAt: 1 },
    { v: 1, type: 'pin', target: ID, op: 'pin', expire: 30, sentAt: 1 },
  ];
  for (const o of bad) assert.throws(() => decodePlaintext(raw(o)), TypeError, JSON.stringify(o));
  assert.throws(() => encodePlaintext({ type: 'timer', seconds: 60, sentAt: 1 }), { code: 'invalid' });
  assert.throws(() => encodePlaintext({ type: 'text', body: 'x', expire: 1, sentAt: 1 }), { code: 'invalid' });
});

test('an unknown type or a newer version decodes to the unknown placeholder, never an error', () => {
  assert.deepEqual(decodePlaintext(raw({ v: 1, type: 'poll', question: '?', sentAt: 5 })), { v: 1, type: 'unknown', original: 'poll v1', sentAt: 5 });
  assert.deepEqual(decodePlaintext(raw({ v: 2, type: 'text', body: 'x', sentAt: 6, mid: MID })), {
    v: 2,
    type: 'unknown',
    original: 'text v2',
    sentAt: 6,
    mid: MID,
  });
});

test('a malformed plaintext of a known type is refused', () => {
  const bad = [
    { v: 1, type: 'text', sentAt: 1 },
    { v: 1, type: 'text', body: 3, sentAt: 1 },
    { v: 1, type: 'text', body: 'x', sentAt: 1, replyTo: 'not-an-id' },
    { v: 1, type: 'text', body: 'x', sentAt: 1, mid: 'short' },
    { v: 1, type: 'reaction', target: ID, emoji: '👍', op: 'toggle', sentAt: 1 },
    { v: 1, type: 'reaction', target: ID, emoji: 'x'.repeat(17), op: 'add', sentAt: 1 },
    { v: 1, type: 'reaction', target: ID, emoji: 'a\nb', op: 'add', sentAt: 1 },
    { v: 1, type: 'edit', target: 'x', body: 'y', sentAt: 1 },
    { v: 1, type: 'delete', sentAt: 1 },
    { v: 1, type: 'receipt', ids: [], status: 'read', sentAt: 1 },
    { v: 1, type: 'receipt', ids: [ID], status: 'seen', sentAt: 1 },
    { v: 1, type: 'text', body: 'x', sentAt: -1 },
    { v: 1, type: 'text', body: 'x' },
    { type: 'text', body: 'x', sentAt: 1 },
    ['not', 'an', 'object'],
  ];
  for (const o of bad) assert.throws(() => decodePlaintext(raw(o)), TypeError, JSON.stringify(o));
  assert.throws(() => decodePlaintext(new Uint8Array(100)), TypeError);
  assert.throws(() => encodePlaintext({ type: 'edit', target: 'nope', body: 'x', sentAt: 1 }), { code: 'invalid' });
});

test('textRoom tells how much of one message a text uses; the largest that fits is encodable, one more byte is too_long', () => {
  const { used, max } = textRoom('');
  assert.equal(max, MAX_PADDED_BYTES);
  const fits = 'a'.repeat(max - used);
  assert.equal(textRoom(fits).used, max);
  assert.equal(encodePlaintext({ type: 'text', body: fits, sentAt: 1e13, mid: MID }).length, MAX_PADDED_BYTES);
  assert.throws(() => encodePlaintext({ type: 'text', body: fits + 'a', sentAt: 1e13, mid: MID }), { code: 'too_long' });
  assert.ok(textRoom('é').used === used + 2, 'bytes, not characters');
});
