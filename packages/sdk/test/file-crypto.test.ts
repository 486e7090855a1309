/**
 * File encryption (crypto/file.ts, attachments/source.ts) against the checked-in vectors made with
 * node:crypto from the written rule, and the properties the rule promises: Padmé's bounded
 * overhead and few buckets, one sealed chunk per upload part, and parts that open only in their
 * place, with their last flag, under their key.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import {
  CHUNK_BYTES,
  chunkCount,
  cipherSize,
  importFileKey,
  maxPlainSize,
  openChunk,
  padme,
  paddedLength,
  plainChunks,
  sealChunk,
  type FileSource,
} from '../src/index.js';
import { V, unhex } from './fixtures.js';

const b64sha = (parts: Uint8Array[]): string => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest('base64url');
};

async function sealAll(source: FileSource, plainSize: number, raw = unhex(V.file.key)): Promise<Uint8Array[]> {
  const key = await importFileKey(raw, 'encrypt');
  const out: Uint8Array[] = [];
  const n = chunkCount(plainSize);
  let i = 0;
  for await (const c of plainChunks(source, plainSize)) out.push(await sealChunk(key, i, i++ === n - 1, c));
  return out;
}

test('Padmé buckets equal the vectors computed from the written rule', () => {
  for (const [len, padded] of V.file.padme as [number, number][]) assert.equal(padme(len), padded, `padme(${len})`);
});

test('padding costs at most 12.5 %, at most 6.25 % from the 256-byte floor and 3.125 % from 64 KiB on', () => {
  for (let len = 256; len < 1 << 26; len = Math.floor(len * 1.013) + 1) {
    const over = (paddedLength(len) - len) / len;
    assert.ok(over <= 0.0625, `${len}: ${over}`);
    if (len >= 65536) assert.ok(over <= 0.03125, `${len}: ${over}`);
  }
  for (let len = 2; len < 256; len++) assert.ok(padme(len) - len <= len / 8, `padme(${len})`);
  assert.equal(paddedLength(0), 256, 'an empty file is padded to the floor');
  assert.equal(paddedLength(1), 256);
});

test('a padded length leaks little: every file from 1 MiB to 2 MiB falls in one of 33 sizes', () => {
  const buckets = new Set<number>();
  for (let len = 1 << 20; len < 1 << 21; len += 97) buckets.add(cipherSize(len));
  assert.equal(buckets.size, 33);
});

test('a small file seals to the vector parts and hash', async () => {
  const plain = unhex(V.file.small.plaintextHex);
  const parts = await sealAll(plain, plain.length);
  assert.deepEqual(
    parts.map((p) => Buffer.from(p).toString('base64url')),
    V.file.small.parts,
  );
  assert.equal(b64sha(parts), V.file.small.sha256);
  assert.equal(parts[0]!.length, cipherSize(plain.length));
});

test('a file one byte past one chunk makes a full part and a short one, equal to the vectors from bytes, a Blob and a stream', async () => {
  const t = V.file.twoChunks;
  const plain = Uint8Array.from({ length: t.plainSize }, (_, i) => i % 251);
  async function* stream(): AsyncGenerator<Uint8Array> {
    for (let o = 0; o < plain.length; o += 1000) yield plain.slice(o, o + 1000);
  }
  for (const source of [plain, new Blob([plain]), stream()] as FileSource[]) {
    const parts = await sealAll(source, t.plainSize);
    assert.deepEqual(
      parts.map((p) => p.length),
      t.partSizes,
    );
    assert.deepEqual(
      parts.map((p) => createHash('sha256').update(p).digest('base64url')),
      t.partSha256,
    );
    assert.equal(b64sha(parts), t.sha256);
  }
  assert.equal(t.partSizes[0], CHUNK_BYTES + 16, 'a full sealed chunk is exactly one upload part');
});

test('a part opens only at its index, with its last flag, under its key', async () => {
  const plain = Uint8Array.from({ length: 50_000 }, (_, i) => i % 13);
  const parts = await sealAll(plain, plain.length);
  assert.equal(parts.length, 3);
  const key = await importFileKey(unhex(V.file.key), 'decrypt');
  const opened = await openChunk(key, 1, false, parts[1]!);
  assert.equal(opened.length, CHUNK_BYTES);
  await assert.rejects(openChunk(key, 0, false, parts[1]!), 'a part moved to another place');
  await assert.rejects(openChunk(key, 1, true, parts[1]!), 'a middle part passed off as the last (the file cut off)');
  await assert.rejects(openChunk(key, 2, false, parts[2]!), 'the last part without its last flag');
  const bent = parts[1]!.slice();
  bent[100]! ^= 1;
  await assert.rejects(openChunk(key, 1, false, bent), 'a flipped bit');
  const other = await importFileKey(new Uint8Array(32).fill(9), 'decrypt');
  await assert.rejects(openChunk(other, 1, false, parts[1]!), 'another key');
});

test('the largest file a 25 MiB limit takes is 24.5 MiB: the tags and padding must fit the limit too', () => {
  const max = 25 * 1024 * 1024;
  const edge = maxPlainSize(max);
  assert.equal(edge, 25_690_112);
  assert.ok(cipherSize(edge) <= max);
  assert.ok(cipherSize(edge + 1) > max);
  assert.ok(cipherSize(25_000_000) <= max, 'a file of 25 MB (decimal) fits');
});

test('a stream that is shorter or longer than stated is refused', async () => {
  async function* of(n: number): AsyncGenerator<Uint8Array> {
    yield new Uint8Array(n);
  }
  await assert.rejects(sealAll(of(999), 1000), /changed while it was being sent/);
  await assert.rejects(sealAll(of(1001), 1000), /changed while it was being sent/);
});
