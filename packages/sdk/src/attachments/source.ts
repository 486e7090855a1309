/**
 * Where a file's bytes come from, read a chunk at a time so that a 25 MiB file is never held as
 * one string: a Blob-like object (a browser's File or Blob, Node's Blob), a Uint8Array, or an async
 * iterable of byte pieces (a stream) whose length the caller states. A Blob or an array can start
 * at any chunk, so a resumed upload reads only from there on; a stream is read from its start.
 */
import { CHUNK_BYTES, paddedLength } from '../crypto/file.js';
import { SdkError } from '../errors.js';

/** The part of the Blob interface the SDK uses (File, Blob in browsers and Node). */
export interface BlobLike {
  readonly size: number;
  slice(start?: number, end?: number): BlobLike;
  arrayBuffer(): Promise<ArrayBuffer>;
}

export type FileSource = BlobLike | Uint8Array | AsyncIterable<Uint8Array> | (() => AsyncIterable<Uint8Array>);

const isBlobLike = (s: unknown): s is BlobLike =>
  typeof s === 'object' && s !== null && typeof (s as BlobLike).slice === 'function' && typeof (s as BlobLike).arrayBuffer === 'function';

/** The source's length when it knows it (a Blob or an array), else undefined. */
export function sourceSize(s: FileSource): number | undefined {
  if (s instanceof Uint8Array) return s.length;
  if (isBlobLike(s)) return s.size;
  return undefined;
}

const changed = (): SdkError => new SdkError('invalid', { message: 'The file changed while it was being sent; attach it again.' });

/**
 * The padded plaintext's chunks from chunk `from` on: CHUNK_BYTES each, the last shorter, zero
 * bytes after the file's `plainSize` bytes up to its Padmé bucket.
 */
export async function* plainChunks(source: FileSource, plainSize: number, from = 0): AsyncGenerator<Uint8Array> {
  const padded = paddedLength(plainSize);
  const count = Math.ceil(padded / CHUNK_BYTES);
  const chunkAt = (i: number): Uint8Array => new Uint8Array(Math.max(0, Math.min(CHUNK_BYTES, padded - i * CHUNK_BYTES)));
  if (source instanceof Uint8Array || isBlobLike(source)) {
    if (sourceSize(source) !== plainSize) throw changed();
    for (let i = from; i < count; i++) {
      const out = chunkAt(i);
      const start = Math.min(plainSize, i * CHUNK_BYTES);
      const end = Math.min(plainSize, start + out.length);
      const bytes = source instanceof Uint8Array ? source.subarray(start, end) : new Uint8Array(await source.slice(start, end).arrayBuffer());
      if (bytes.length !== end - start) throw changed();
      out.set(bytes);
      yield out;
    }
    return;
  }
  // A stream: read from its start, cut into chunks, skip the ones before `from`.
  const pieces = typeof source === 'function' ? source() : source;
  let i = 0;
  let out = chunkAt(0);
  let fill = 0;
  let total = 0;
  for await (const piece of pieces) {
    total += piece.length;
    if (total > plainSize) throw changed();
    let o = 0;
    while (o < piece.length) {
      const n = Math.min(out.length - fill, piece.length - o);
      out.set(piece.subarray(o, o + n), fill);
      fill += n;
      o += n;
      if (fill === out.length) {
        if (i >= from) yield out;
        i++;
        out = chunkAt(i);
        fill = 0;
      }
    }
  }
  if (total !== plainSize) throw changed();
  // The rest is padding: zero bytes up to the bucket.
  for (; i < count; i++) {
    if (i >= from) yield out;
    out = chunkAt(i + 1);
  }
}
