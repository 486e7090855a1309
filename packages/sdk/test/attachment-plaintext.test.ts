/**
 * The plaintext of file, photo and voice messages (wire/attachment-plain.ts): they encode
 * and decode whole, and a received one with any field of the wrong shape is malformed (shown as an
 * error, never trusted). Search finds them by file name and by caption.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  attachmentRecord,
  cipherSize,
  decodePlaintext,
  encodePlaintext,
  safeFileName,
  safeMime,
  SearchIndex,
  utf8,
  type PlainInput,
} from '../src/index.js';

const file = {
  type: 'file',
  id: 'A'.repeat(22),
  key: 'K'.repeat(43),
  sha256: 'H'.repeat(43),
  size: cipherSize(1234),
  plainSize: 1234,
  name: 'report.pdf',
  mime: 'application/pdf',
  caption: 'the Q3 numbers',
  sentAt: 1_800_000_000_000,
  mid: 'M'.repeat(22),
} as const;
const thumb = 'data:image/jpeg;base64,' + Buffer.alloc(2000, 7).toString('base64');
const photo = { ...file, type: 'photo', name: 'beach.jpg', mime: 'image/jpeg', width: 2048, height: 1536, thumb } as const;
const voice = { ...file, type: 'voice', name: 'voice.ogg', mime: 'audio/ogg', durationMs: 4200, waveform: [0, 12, 255, 80] } as const;

/** Encodes a plaintext past the sender's check, as a hostile or buggy client could. */
function forged(o: Record<string, unknown>): Uint8Array {
  const json = utf8(JSON.stringify({ v: 1, ...o }));
  const out = new Uint8Array(Math.ceil(json.length / 256) * 256);
  out.set(json);
  return out;
}

test('file, photo and voice messages decode to what was encoded', () => {
  for (const p of [file, photo, voice]) {
    const back = decodePlaintext(encodePlaintext(p as PlainInput));
    assert.deepEqual(back, { v: 1, ...p });
  }
});

test('a received attachment message with a field of the wrong shape is malformed, never trusted', () => {
  const bad: [string, Record<string, unknown>][] = [
    ['a size that is not the padded size of plainSize', { ...file, size: file.size + 16 }],
    ['a negative plainSize', { ...file, plainSize: -1 }],
    ['a key of 31 bytes', { ...file, key: 'K'.repeat(42) }],
    ['an id that is not an id16', { ...file, id: 'short' }],
    ['a hash of the wrong length', { ...file, sha256: 'H'.repeat(40) }],
    ['a name with a path', { ...file, name: '../../.bashrc' }],
    ['a name with a right-to-left override', { ...file, name: 'invoice\u202Efdp.exe' }],
    ['a name with a control character', { ...file, name: 'a\nb.txt' }],
    ['an empty name', { ...file, name: '' }],
    ['a name too long', { ...file, name: 'x'.repeat(256) }],
    ['an odd MIME type', { ...file, mime: 'text/html; charset=utf-8' }],
    ['a caption that is not text', { ...file, caption: 5 }],
    ['a photo without its thumbnail', { ...photo, thumb: undefined }],
    ['a thumbnail that is not an image data URL', { ...photo, thumb: 'https://tracker.example/p.gif' }],
    ['a thumbnail over 4 KB', { ...photo, thumb: 'data:image/png;base64,' + Buffer.alloc(5000).toString('base64') }],
    ['a photo of width 0', { ...photo, width: 0 }],
    ['a waveform of 65 values', { ...voice, waveform: new Array(65).fill(1) }],
    ['a waveform value of 256', { ...voice, waveform: [256] }],
    ['a negative duration', { ...voice, durationMs: -5 }],
  ];
  for (const [what, o] of bad) assert.throws(() => decodePlaintext(forged(o)), TypeError, what);
});

test('the sender refuses what a receiver would refuse, before anything is sent', () => {
  assert.throws(() => encodePlaintext({ ...file, name: 'a/b' }), /Not a valid file message/);
  assert.throws(() => encodePlaintext({ ...photo, width: 1.5 }), /Not a valid photo message/);
  assert.throws(() => encodePlaintext({ ...file, caption: 'x'.repeat(30_000) }), /too long/);
});

test('names and types are made safe to send: separators and controls replaced, length cut, MIME normalised', () => {
  assert.equal(safeFileName('a/b\\c\u202Ed.txt'), 'a_b_c_d.txt');
  assert.equal(safeFileName('..'), 'file');
  assert.equal(safeFileName('😀'.repeat(200)).length <= 255, true);
  assert.equal(safeMime('Image/JPEG; q=1'), 'image/jpeg');
  assert.equal(safeMime(''), 'application/octet-stream');
});

test('search finds a file by its name and by its caption, and forgets it once deleted', () => {
  const idx = new SearchIndex();
  const rec = attachmentRecord({ id: '01HZY3T4K5M6N7P8Q9R0STVWXY', chat: 'dm:bob', ts: 5, from: 'alice' }, { v: 1, ...file });
  idx.put(rec);
  assert.equal(idx.search('report')[0]?.file, 'report.pdf');
  assert.equal(idx.search('Q3 numbers')[0]?.id, rec.id);
  assert.equal(idx.search('beach').length, 0);
  const bare = attachmentRecord({ id: '01HZY3T4K5M6N7P8Q9R0STVWXZ', chat: 'dm:bob', ts: 6, from: 'alice' }, {
    v: 1,
    ...photo,
    caption: undefined,
  } as never);
  idx.put(bare);
  assert.equal(idx.search('beach.jpg')[0]?.id, bare.id, 'a photo without caption is found by its name');
  idx.put({ ...rec, deleted: true });
  assert.equal(idx.search('report').length, 0);
});
