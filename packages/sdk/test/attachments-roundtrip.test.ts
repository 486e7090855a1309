/**
 * Files up and down through a real service: encrypted in parts on one account, stored as opaque
 * ciphertext of its Padmé bucket's size, downloaded and checked by another account byte for byte.
 * Empty files are allowed (they pad to the 256-byte floor like any tiny file). A file over the
 * service's limit is refused before any request.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { chunkCount, cipherSize, downloadBytes, downloadFile, isSdkError, maxPlainSize, Uploader, type UploadedFile } from '../src/index.js';
import { register, startServer, type Device, type TestServer } from './server.js';

let server: TestServer;
let alice: Device;
let bob: Device;
before(async () => {
  server = await startServer();
  alice = await register(server);
  bob = await register(server);
});
after(async () => {
  await server.close();
});

async function upload(d: Device, file: Uint8Array | Blob): Promise<UploadedFile> {
  const up = new Uploader(d.api);
  const size = file instanceof Uint8Array ? file.length : file.size;
  return up.run(await up.begin(size), file);
}

async function stored(s: TestServer, id: string): Promise<{ size: number; parts: number }> {
  const [row] = await s.query(
    `SELECT size, (SELECT count(*) FROM attachment_parts WHERE attachment_id = '${id}') AS parts FROM attachments WHERE id = '${id}'`,
  );
  return { size: Number(row!.size), parts: Number(row!.parts) };
}

test('files of 0 and 1 bytes, one full part, one byte more and 1 MB come back byte for byte, stored at their bucket size', async () => {
  // 23,552 is the largest file whose bucket fits one part; a byte more pads to 24,576 and makes two.
  for (const len of [0, 1, 23_552, 23_553, 1_000_000]) {
    const file = new Uint8Array(randomBytes(len));
    const done = await upload(alice, file);
    assert.equal(done.size, cipherSize(len), `${len}: ciphertext of the bucket's size`);
    assert.deepEqual(await stored(server, done.id), { size: cipherSize(len), parts: chunkCount(len) }, `${len}: the service holds that size`);
    const back = await downloadBytes(bob.api, done);
    assert.equal(back.length, len);
    assert.ok(Buffer.from(back).equals(Buffer.from(file)), `${len} bytes came back as they went`);
  }
  assert.equal((await stored(server, (await upload(alice, new Uint8Array(23_552))).id)).parts, 1, 'exactly one part');
});

test('upload progress counts ciphertext bytes up to the whole; download progress too', async () => {
  const file = new Uint8Array(randomBytes(100_000));
  const up = new Uploader(alice.api);
  const seen: [number, number][] = [];
  const done = await up.run(await up.begin(file.length), file, { onProgress: (d, t) => seen.push([d, t]) });
  assert.equal(seen.length, chunkCount(file.length));
  assert.deepEqual(seen.at(-1), [done.size, done.size]);
  assert.ok(seen.every(([d], i) => i === 0 || d > seen[i - 1]![0]));
  const down: number[] = [];
  await downloadBytes(bob.api, done, { onProgress: (d) => down.push(d) });
  assert.equal(down.at(-1), done.size);
});

test('a file over the limit is refused before any request, with its name and the limit in words', async () => {
  const up = new Uploader(alice.api);
  const max = await up.maxFileBytes();
  assert.equal(max, maxPlainSize(25 * 1024 * 1024));
  const before = alice.requests.length;
  await assert.rejects(up.begin(max + 1, 'holiday.mov'), (e: unknown) => {
    assert.ok(isSdkError(e, 'file_too_large'));
    assert.equal(e.message, 'holiday.mov is too large (limit 25 MB)');
    return true;
  });
  assert.equal(alice.requests.length, before, 'nothing was sent');
  const [row] = await server.query('SELECT count(*) AS n FROM attachments');
  const n = Number(row!.n);
  await assert.rejects(up.begin(25 * 1024 * 1024, 'exactly.bin'), /too large/);
  assert.equal(Number((await server.query('SELECT count(*) AS n FROM attachments'))[0]!.n), n, 'no upload was made');
});

test('a 25 MiB file goes up from a Blob and comes back byte for byte, as a stream', async () => {
  // 25 MiB of plaintext makes 25 MiB + 17,504 bytes of ciphertext, past the default limit on the ciphertext.
  const big = await startServer({ ATTACHMENT_MAX_BYTES: String(26 * 1024 * 1024) });
  try {
    const a = await register(big);
    const b = await register(big);
    const file = new Uint8Array(randomBytes(25 * 1024 * 1024));
    const t0 = performance.now();
    const done = await upload(a, new Blob([file]));
    const t1 = performance.now();
    assert.equal(done.size, cipherSize(file.length));
    let offset = 0;
    const h = createHash('sha256');
    for await (const piece of downloadFile(b.api, done)) {
      assert.ok(Buffer.from(piece).equals(Buffer.from(file.subarray(offset, offset + piece.length))), `bytes at ${offset}`);
      h.update(piece);
      offset += piece.length;
    }
    const t2 = performance.now();
    assert.equal(offset, file.length);
    assert.equal(h.digest('hex'), createHash('sha256').update(file).digest('hex'));
    const mb = file.length / 1e6;
    console.log(
      `25 MiB: upload ${(t1 - t0).toFixed(0)} ms (${(mb / ((t1 - t0) / 1000)).toFixed(1)} MB/s), download ${(t2 - t1).toFixed(0)} ms (${(mb / ((t2 - t1) / 1000)).toFixed(1)} MB/s)`,
    );
  } finally {
    await big.close();
  }
});
