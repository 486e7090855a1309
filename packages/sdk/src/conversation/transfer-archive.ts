/**
 * The history transfer as an archive in the attachment store (docs/CRYPTO.md): the sending device
 * seals the history into chunks exactly as for the paced transfer (transfer-wire.ts: the transfer
 * key, the chain, the receiving device in every seal), only larger, puts the files it keeps after
 * them, uploads the lot as one attachment or a few, and sends one `history-archive` message that
 * names them.
 *
 *   archive = frame*      frame = kind (1 byte) | length (4 bytes, big-endian) | body
 *   kind 1: a chunk, body = data[k] of transfer-wire.ts (iv || AES-256-GCM under the transfer key)
 *   kind 2: a kept file, body = attachment id (22 characters) || the file's bytes
 *
 * The `total` chunks come first, in order, then the `files` files; nothing may follow. The
 * attachments cut the archive into pieces of at most the service's largest file, frames running on
 * from one into the next. Each attachment is encrypted under its own fresh key like any file
 * (attachments/upload.ts); its id, key, SHA-256 and sizes travel in the `history-archive` message,
 * whose tag (under the transfer key) covers them.
 */
import type { KeptFile, KeptFilesSource } from '../attachments/files.js';
import { concat, fromUtf8, utf8 } from '../bytes.js';
import { SdkError } from '../errors.js';

/** Compressed bytes per chunk of an archive: big enough to seal few, small enough to show progress. */
export const ARCHIVE_CHUNK_BYTES = 64 * 1024;
/** The largest chunk frame a receiver takes (a chunk is at most ARCHIVE_CHUNK_BYTES and its seal). */
const MAX_CHUNK_FRAME = 1024 * 1024;
const HEAD = 5;
export const KIND_CHUNK = 1;
export const KIND_FILE = 2;
const ID_CHARS = 22;
/** A kept file is read this much at a time. */
const READ_BYTES = 1024 * 1024;

export interface ArchiveFile {
  id: string;
  size: number;
}

const head = (kind: number, length: number): Uint8Array => {
  const h = new Uint8Array(HEAD);
  h[0] = kind;
  new DataView(h.buffer).setUint32(1, length);
  return h;
};

/** The archive's length in bytes: its chunks (their sealed lengths), then its files. */
export function archiveLength(chunkLengths: readonly number[], files: readonly ArchiveFile[]): number {
  return chunkLengths.reduce((a, n) => a + HEAD + n, 0) + files.reduce((a, f) => a + HEAD + ID_CHARS + f.size, 0);
}

const sizeOf = (f: KeptFile): number => (f instanceof Uint8Array ? f.length : f.size);

async function readKept(f: KeptFile, start: number, end: number): Promise<Uint8Array> {
  return f instanceof Uint8Array ? f.subarray(start, end) : new Uint8Array(await f.slice(start, end).arrayBuffer());
}

/** The files of `ids` that `kept` holds, with their sizes, in the order given. */
export async function keptFiles(kept: KeptFilesSource, ids: Iterable<string>): Promise<ArchiveFile[]> {
  const held = new Set(await kept.list());
  const out: ArchiveFile[] = [];
  for (const id of ids) {
    if (!held.has(id)) continue;
    const f = await kept.get(id).catch(() => undefined);
    if (f) out.push({ id, size: sizeOf(f) });
  }
  return out;
}

const changed = (): SdkError => new SdkError('invalid', { message: 'A file kept on this device changed while the history was being sent.' });

/**
 * The archive's bytes from `start` to `end`, a piece at a time (a file is read a megabyte at a
 * time, never whole). The same arguments give the same bytes, so an upload resumes.
 */
export async function* archiveBytes(
  chunks: readonly Uint8Array[],
  files: readonly ArchiveFile[],
  kept: KeptFilesSource | undefined,
  start: number,
  end: number,
): AsyncGenerator<Uint8Array> {
  let at = 0;
  const clip = function* (bytes: Uint8Array): Generator<Uint8Array> {
    const from = Math.max(start, at);
    const to = Math.min(end, at + bytes.length);
    if (from < to) yield bytes.subarray(from - at, to - at);
    at += bytes.length;
  };
  for (const c of chunks) {
    if (at >= end) return;
    if (at + HEAD + c.length <= start) {
      at += HEAD + c.length;
      continue;
    }
    yield* clip(head(KIND_CHUNK, c.length));
    yield* clip(c);
  }
  for (const f of files) {
    if (at >= end) return;
    const length = ID_CHARS + f.size;
    if (at + HEAD + length <= start) {
      at += HEAD + length;
      continue;
    }
    yield* clip(concat(head(KIND_FILE, length), utf8(f.id)));
    const file = await kept?.get(f.id);
    if (!file || sizeOf(file) !== f.size) throw changed();
    // Only the part of the file within [start, end) is read.
    const from = Math.max(0, start - at);
    const to = Math.min(f.size, end - at);
    for (let o = from; o < to; o += READ_BYTES) {
      const piece = await readKept(file, o, Math.min(to, o + READ_BYTES));
      if (piece.length !== Math.min(to, o + READ_BYTES) - o) throw changed();
      yield piece;
    }
    at += f.size;
  }
}

export type Frame = { kind: typeof KIND_CHUNK; data: Uint8Array } | { kind: typeof KIND_FILE; id: string; bytes: Uint8Array };

/**
 * Reads frames out of the archive's bytes as they come. `limit` bounds a file frame (no larger
 * than the archive itself); a chunk frame is at most MAX_CHUNK_FRAME. A malformed frame throws
 * SdkError `attachment_corrupt`.
 */
export class ArchiveReader {
  private buf: Uint8Array[] = [];
  private have = 0;
  private need: { kind: number; length: number } | null = null;

  constructor(private readonly limit: number) {}

  /** Frames completed by `bytes`; `consumed` is how many archive bytes each one spanned. */
  *push(bytes: Uint8Array): Generator<Frame & { spanned: number }> {
    this.buf.push(bytes);
    this.have += bytes.length;
    for (;;) {
      if (!this.need) {
        if (this.have < HEAD) return;
        const h = this.take(HEAD);
        const kind = h[0]!;
        const length = new DataView(h.buffer, h.byteOffset, HEAD).getUint32(1);
        if (kind === KIND_CHUNK ? length < 29 || length > MAX_CHUNK_FRAME : kind !== KIND_FILE || length < ID_CHARS || length > this.limit)
          throw damaged('a part of it is not what the archive holds');
        this.need = { kind, length };
      }
      if (this.have < this.need.length) return;
      const { kind, length } = this.need;
      this.need = null;
      const body = this.take(length);
      if (kind === KIND_CHUNK) yield { kind: KIND_CHUNK, data: body, spanned: HEAD + length };
      else {
        let id: string;
        try {
          id = fromUtf8(body.subarray(0, ID_CHARS));
        } catch {
          throw damaged('a file in it has no valid name');
        }
        yield { kind: KIND_FILE, id, bytes: body.subarray(ID_CHARS), spanned: HEAD + length };
      }
    }
  }

  /** Whether every byte pushed belongs to a whole frame. */
  get empty(): boolean {
    return this.have === 0 && !this.need;
  }

  private take(n: number): Uint8Array {
    const all = this.buf.length === 1 ? this.buf[0]! : concat(...this.buf);
    const out = all.slice(0, n);
    const rest = all.subarray(n);
    this.buf = rest.length > 0 ? [rest] : [];
    this.have = rest.length;
    return out;
  }
}

export const damaged = (why: string): SdkError =>
  new SdkError('attachment_corrupt', {
    message: `The history archive did not pass its check (${why}): it was damaged or altered, and nothing more of it was taken.`,
  });
