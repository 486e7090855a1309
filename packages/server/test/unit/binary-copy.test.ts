/** The reader of PostgreSQL's binary COPY format, by which attachment parts are read as bytes. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { binaryCopyFields } from '../../src/store/postgres/attachments.js';

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');

/** A binary COPY of one-field rows, with a header extension of `ext` bytes. */
function copyOf(rows: Buffer[], ext = 0): Buffer {
  const head = Buffer.alloc(8 + ext);
  head.writeUInt32BE(ext, 4);
  const body = rows.flatMap((r) => {
    const h = Buffer.alloc(6);
    h.writeInt16BE(1, 0);
    h.writeInt32BE(r.length, 2);
    return [h, r];
  });
  return Buffer.concat([SIGNATURE, head, ...body, Buffer.from([0xff, 0xff])]);
}

test('every row of a binary COPY comes out as its bytes, in order, a header extension skipped', () => {
  const rows = [Buffer.from([0, 1, 2, 255]), Buffer.alloc(0), Buffer.from('\r\n\0 bytes as they are', 'latin1')];
  assert.deepEqual(binaryCopyFields(copyOf(rows)), rows);
  assert.deepEqual(binaryCopyFields(copyOf(rows, 5)), rows);
  assert.deepEqual(binaryCopyFields(copyOf([])), []);
});

test('a binary COPY that is not one, or is cut short, is refused rather than read as bytes', () => {
  const good = copyOf([Buffer.alloc(100, 7)]);
  assert.throws(() => binaryCopyFields(Buffer.from('id\tdata\n')), /not a binary COPY/);
  assert.throws(() => binaryCopyFields(good.subarray(0, good.length - 50)), /past its end/);
  const twoFields = Buffer.from(good);
  twoFields.writeInt16BE(2, 19);
  assert.throws(() => binaryCopyFields(twoFields), /2 fields/);
});
