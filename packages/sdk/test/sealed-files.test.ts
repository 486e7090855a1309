/**
 * Files kept sealed at rest in chunks (attachments/sealed-files.ts): what goes in comes out byte
 * for byte, whole or by slices that open only the chunks they cover; no row holds a byte of the
 * file in the clear; a chunk moved to another place, another file or taken from an older copy of
 * the same file does not open; a put cut short reads as absent and is swept; the budget drops the
 * oldest files first.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import {
  importAesKey,
  isSdkError,
  MemorySealedRows,
  plainChunks,
  SealedAttachmentFiles,
  SealedFiles,
  type SealedFilesOptions,
} from '../src/index.js';

const CHUNK = 1000;

async function setup(o: Partial<SealedFilesOptions> = {}) {
  const rows = new MemorySealedRows();
  const historyKey = await importAesKey(new Uint8Array(randomBytes(32)));
  const files = new SealedFiles({
    rows,
    historyKey,
    space: 'kept',
    prefix: 'kept.',
    name: async (id) => `kept.${Buffer.from(id).toString('hex')}`,
    chunkBytes: CHUNK,
    ...o,
  });
  return { rows, historyKey, files };
}

/** A Blob whose reads are counted, as a browser's File. */
const blobOf = (bytes: Uint8Array) => new Blob([bytes as BlobPart]);

test('a file goes in by chunks and comes out byte for byte, whole and by any slice', async () => {
  const { files, rows } = await setup();
  const bytes = new Uint8Array(randomBytes(3 * CHUNK + 17));
  const info = await files.put('a1', blobOf(bytes));
  assert.equal(info.size, bytes.length);
  // A header and four chunks.
  assert.deepEqual(await rows.names('kept.'), ['kept.6131', 'kept.6131.0', 'kept.6131.1', 'kept.6131.2', 'kept.6131.3']);
  const f = await files.open('a1');
  assert.ok(f);
  assert.equal(f.size, bytes.length);
  assert.deepEqual(await f.bytes(), bytes);
  for (const [s, e] of [
    [0, 1],
    [999, 1001],
    [1500, 2600],
    [3 * CHUNK, 3 * CHUNK + 17],
    [-20, -3],
    [50, 10],
  ] as const)
    assert.deepEqual(await f.slice(s, e).bytes(), bytes.slice(s, e), `slice(${s}, ${e})`);
  assert.deepEqual(new Uint8Array(await f.slice(10).slice(5, 20).arrayBuffer()), bytes.slice(15, 30));
  assert.equal(await files.open('nothing'), undefined);
});

test('a slice opens only the chunks it covers, and reading a chunk in small pieces opens it once', async () => {
  const { files, rows } = await setup();
  const bytes = new Uint8Array(randomBytes(10 * CHUNK));
  await files.put('a2', bytes);
  const f = (await files.open('a2'))!;
  rows.reads = 0;
  assert.deepEqual(await f.slice(4 * CHUNK + 10, 4 * CHUNK + 20).bytes(), bytes.slice(4 * CHUNK + 10, 4 * CHUNK + 20));
  assert.equal(rows.reads, 1, 'one chunk read');
  rows.reads = 0;
  // As the uploader reads it: in pieces smaller than a chunk, each chunk's pieces one after another.
  const plain: Uint8Array[] = [];
  for await (const c of plainChunks(f, bytes.length)) plain.push(c);
  assert.deepEqual(Buffer.concat(plain).subarray(0, bytes.length), Buffer.from(bytes));
  assert.equal(rows.reads, 10, 'each of the ten chunks read once');
});

test('no row holds the file in the clear, in bytes or in base64', async () => {
  const { files, rows } = await setup();
  const text = 'a line of a private letter, kept on this device only. '.repeat(100);
  await files.put('a3', new TextEncoder().encode(text));
  const all = JSON.stringify([...rows.map.entries()]);
  const raw = [...rows.map.values()].map((s) => Buffer.from(s.ct, 'base64url').toString('latin1')).join('');
  for (const o of [0, 1, 2]) {
    const piece = text.slice(o, o + 60);
    for (const hay of [all, raw]) {
      assert.ok(!hay.includes(piece.slice(0, 30)), 'no clear text');
      assert.ok(!hay.includes(Buffer.from(piece).toString('base64url').slice(4, 40)), 'no base64 of it');
    }
  }
});

test('a chunk moved to another place, another file or from an older copy does not open', async () => {
  const { files, rows } = await setup();
  const a = new Uint8Array(randomBytes(3 * CHUNK));
  const b = new Uint8Array(randomBytes(3 * CHUNK));
  await files.put('a4', a);
  await files.put('b4', b);
  const corrupt = async (id: string, n: number, what: string) => {
    const f = (await files.open(id))!;
    await assert.rejects(f.slice(n * CHUNK, n * CHUNK + 1).bytes(), (e: unknown) => isSdkError(e, 'attachment_corrupt'), what);
  };
  const A = 'kept.6134';
  const B = 'kept.6234';
  const a0 = rows.map.get(`${A}.0`)!;
  const a1 = rows.map.get(`${A}.1`)!;
  // Swapped within the file.
  rows.map.set(`${A}.0`, a1);
  rows.map.set(`${A}.1`, a0);
  await corrupt('a4', 0, 'chunk 1 in place 0');
  await corrupt('a4', 1, 'chunk 0 in place 1');
  // Another file's chunk in its place.
  rows.map.set(`${A}.0`, rows.map.get(`${B}.0`)!);
  await corrupt('a4', 0, "another file's chunk");
  // The same file kept again: a chunk of the older copy does not open in the newer one.
  const older = rows.map.get(`${A}.2`)!;
  await files.put('a4', a);
  rows.map.set(`${A}.2`, older);
  await corrupt('a4', 2, 'an older copy of the file');
  // A missing chunk.
  await files.put('a4', a);
  rows.map.delete(`${A}.1`);
  await corrupt('a4', 1, 'a chunk gone');
  // A header moved to another name does not open there: that file reads as absent.
  rows.map.set(B, rows.map.get(A)!);
  assert.equal(await files.open('b4'), undefined);
  // A waiting upload's rows do not open as a kept file's, under the same names.
  const { rows: r2, historyKey } = await setup();
  const kept = new SealedFiles({ rows: r2, historyKey, space: 'kept', prefix: 'x.', name: async (id) => `x.${id}`, chunkBytes: CHUNK });
  const upload = new SealedFiles({ rows: r2, historyKey, space: 'upload', prefix: 'x.', name: async (id) => `x.${id}`, chunkBytes: CHUNK });
  await upload.put('c4', a);
  assert.equal(await kept.open('c4'), undefined);
});

test('a put cut short reads as absent, and is swept once it is an hour old', async () => {
  let now = 1_000_000;
  const { files, rows, historyKey } = await setup({ now: () => now });
  const bytes = new Uint8Array(randomBytes(5 * CHUNK));
  let reads = 0;
  // A source that fails at its third chunk, as a tab closed mid-write leaves it.
  const failing = {
    size: bytes.length,
    slice: (s?: number, e?: number) => ({
      size: (e ?? 0) - (s ?? 0),
      slice: () => failing,
      arrayBuffer: async () => {
        if (++reads === 3) throw new Error('the tab closed');
        return bytes.slice(s, e).buffer;
      },
    }),
    arrayBuffer: async () => bytes.buffer,
  };
  await assert.rejects(files.put('a5', failing));
  assert.equal(await files.open('a5'), undefined, 'the incomplete file is absent');
  assert.deepEqual(await files.list(), []);
  assert.ok((await rows.names('kept.')).length > 1, 'its rows are still there');
  // A fresh object (a reload) sweeps nothing younger than an hour, then sweeps it.
  const again = new SealedFiles({ rows, historyKey, space: 'kept', prefix: 'kept.', name: files['o'].name, chunkBytes: CHUNK, now: () => now });
  assert.equal(await again.sweep(), 0);
  now += 61 * 60_000;
  assert.equal(await again.sweep(), 1);
  assert.deepEqual(await rows.names('kept.'), []);
});

test('remove() takes the header and every chunk', async () => {
  const { files, rows } = await setup();
  await files.put('a6', new Uint8Array(randomBytes(4 * CHUNK)));
  await files.put('b6', new Uint8Array(randomBytes(CHUNK)));
  await files.remove('a6');
  assert.deepEqual(await rows.names('kept.'), ['kept.6236', 'kept.6236.0']);
  assert.deepEqual(
    (await files.list()).map((f) => f.id),
    ['b6'],
  );
});

test('the budget drops the oldest files first, until the rest fit', async () => {
  let now = 1;
  const { files, historyKey, rows } = await setup({ now: () => now });
  for (const [id, size] of [
    ['f1', 3000],
    ['f2', 2000],
    ['f3', 2500],
    ['f4', 1000],
  ] as const) {
    await files.put(id, new Uint8Array(size));
    now += 10;
  }
  assert.deepEqual(await files.trim(9000), []);
  assert.deepEqual(await files.trim(5000), ['f1', 'f2']);
  // A fresh object reads the same list from the rows.
  const again = new SealedFiles({ rows, historyKey, space: 'kept', prefix: 'kept.', name: files['o'].name, chunkBytes: CHUNK });
  assert.deepEqual(
    (await again.list()).map((f) => [f.id, f.size]),
    [
      ['f3', 2500],
      ['f4', 1000],
    ],
  );
  assert.equal(await again.open('f1'), undefined);
  assert.deepEqual(await again.trim(0), ['f3', 'f4']);
  assert.deepEqual(await rows.names('kept.'), []);
});

test('as the outbox keeps a file waiting for its upload: put, get after a reload, remove', async () => {
  const { rows, historyKey } = await setup();
  const make = () =>
    new SealedAttachmentFiles(new SealedFiles({ rows, historyKey, space: 'upload', prefix: 'upload.', name: async (id) => `upload.${id}` }));
  const bytes = new Uint8Array(randomBytes(2_500_000));
  await make().put('up1', new Blob([bytes]));
  const f = await make().get('up1');
  assert.ok(f);
  assert.equal(f.size, bytes.length);
  assert.deepEqual(await f.bytes(), bytes);
  // Three chunks of 1 MiB, none holding the whole file.
  assert.deepEqual(await rows.names('upload.'), ['upload.up1', 'upload.up1.0', 'upload.up1.1', 'upload.up1.2']);
  await make().remove('up1');
  assert.equal(await make().get('up1'), undefined);
  assert.deepEqual(await rows.names('upload.'), []);
});
