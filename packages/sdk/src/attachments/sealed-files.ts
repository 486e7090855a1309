/**
 * Files kept sealed at rest a chunk at a time: a file waiting for its upload, or a received one
 * kept for the history. A file is a header row (its id, size, chunk count, when it was kept and a
 * random generation) and one row per chunk of 1 MiB, all sealed under the history key. A chunk's
 * AAD names the kind of file, the attachment id, the generation, its index and the chunk count, so
 * a chunk cannot pass for one of another file, another place in the file, or an older copy of the
 * same file. Rows are named by the app (a tag of the attachment id), so what the store shows is a
 * name, a chunk index and a length.
 *
 * A 25 MiB file is never one value: put() reads its source a chunk at a time, and open() gives a
 * BlobLike whose slice() opens only the chunks it covers (the last one opened is kept, so reading a
 * chunk in upload parts opens it once).
 *
 * What happens to a write that does not go through: the header is written first, marked
 * incomplete, and again once every chunk is written; an incomplete file reads as absent, and
 * sweep() removes those left over. remove() deletes the chunks before the header, so a removal cut
 * short leaves a file that reads as damaged (SdkError `attachment_corrupt`), never a wrong one.
 */
import { b64, randomBytes } from '../bytes.js';
import type { Sealed } from '../crypto/aead.js';
import { openAtRest, sealAtRest } from '../crypto/atrest.js';
import { SdkError } from '../errors.js';
import type { AttachmentFiles, KeptFile } from './files.js';
import type { BlobLike } from './source.js';

/** Bytes per sealed chunk. */
export const KEPT_CHUNK_BYTES = 2 ** 20;

/** A put cut short (a crash, a closed tab) is swept once its header is this old. */
const ABANDONED_MS = 60 * 60_000;

/** Named sealed values with a prefix search: what the app stores the rows in (IndexedDB in the web app). */
export interface SealedRows {
  get(name: string): Promise<Sealed | undefined>;
  put(name: string, value: Sealed): Promise<void>;
  remove(name: string): Promise<void>;
  /** Removes every row whose name starts with `prefix`. */
  removePrefix(prefix: string): Promise<void>;
  /** The names that start with `prefix`. */
  names(prefix: string): Promise<string[]>;
}

export class MemorySealedRows implements SealedRows {
  readonly map = new Map<string, Sealed>();
  /** Reads of rows, for tests that count them. */
  reads = 0;

  async get(name: string): Promise<Sealed | undefined> {
    this.reads++;
    const v = this.map.get(name);
    return v ? { ...v } : undefined;
  }
  async put(name: string, value: Sealed): Promise<void> {
    this.map.set(name, { ...value });
  }
  async remove(name: string): Promise<void> {
    this.map.delete(name);
  }
  async removePrefix(prefix: string): Promise<void> {
    for (const k of [...this.map.keys()]) if (k.startsWith(prefix)) this.map.delete(k);
  }
  async names(prefix: string): Promise<string[]> {
    return [...this.map.keys()].filter((k) => k.startsWith(prefix)).sort();
  }
}

/** A kept file as list() shows it. */
export interface SealedFileInfo {
  /** The attachment id. */
  id: string;
  /** Plaintext bytes. */
  size: number;
  /** When it was kept (ms since 1970, this device's clock). */
  keptAt: number;
}

interface Header extends SealedFileInfo {
  v: 1;
  chunks: number;
  chunkBytes: number;
  gen: string;
  complete: boolean;
}

export interface SealedFilesOptions {
  rows: SealedRows;
  historyKey: CryptoKey;
  /** The kind of file ('upload', 'kept'): in every AAD, so one kind's rows do not open as the other's. */
  space: string;
  /** What every header name starts with (to list them); a header name holds no '.' after it. */
  prefix: string;
  /** The header row's name for attachment `id` (the prefix and a tag of the id); its chunks are `<name>.<index>`. */
  name(id: string): Promise<string>;
  chunkBytes?: number;
  now?: () => number;
}

const headCtx = (space: string, name: string): string => `sealed-file|${space}|${name}`;
const chunkCtx = (space: string, h: Header, n: number): string => `sealed-file-chunk|${space}|${h.id}|${h.gen}|${n}|${h.chunks}`;

const damaged = (cause?: unknown): SdkError =>
  new SdkError('attachment_corrupt', { message: 'The copy of this file kept on this device is damaged.', ...(cause ? { cause } : {}) });

function isHeader(v: unknown): v is Header {
  const h = v as Header;
  return (
    typeof v === 'object' &&
    v !== null &&
    h.v === 1 &&
    typeof h.id === 'string' &&
    Number.isSafeInteger(h.size) &&
    h.size >= 0 &&
    Number.isSafeInteger(h.chunks) &&
    Number.isSafeInteger(h.chunkBytes) &&
    h.chunkBytes > 0 &&
    h.chunks === Math.ceil(h.size / h.chunkBytes) &&
    typeof h.gen === 'string' &&
    typeof h.keptAt === 'number' &&
    typeof h.complete === 'boolean'
  );
}

/** Where a SealedFile's bytes come from: chunk `n` of `chunkBytes` (the last shorter). */
interface ChunkSource {
  readonly size: number;
  readonly chunkBytes: number;
  read(n: number): Promise<Uint8Array>;
}

/** A file kept at rest, read a chunk at a time; a Blob's slice() and arrayBuffer(), and bytes(). */
export class SealedFile implements BlobLike {
  constructor(
    private readonly src: ChunkSource,
    private readonly start = 0,
    private readonly end = src.size,
  ) {}

  get size(): number {
    return this.end - this.start;
  }

  /** As Blob.slice: offsets within this slice, a negative one counted from its end. */
  slice(start = 0, end = this.size): SealedFile {
    const at = (x: number): number => Math.min(this.size, Math.max(0, x < 0 ? this.size + x : x));
    const s = at(start);
    return new SealedFile(this.src, this.start + s, this.start + Math.max(s, at(end)));
  }

  async bytes(): Promise<Uint8Array> {
    const out = new Uint8Array(this.size);
    const cb = this.src.chunkBytes;
    for (let n = Math.floor(this.start / cb); n * cb < this.end; n++) {
      const chunk = await this.src.read(n);
      const from = Math.max(this.start, n * cb);
      const to = Math.min(this.end, n * cb + chunk.length);
      out.set(chunk.subarray(from - n * cb, to - n * cb), from - this.start);
    }
    return out;
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    return (await this.bytes()).buffer as ArrayBuffer;
  }
}

/** Bytes already in memory as a SealedFile (a file kept by an older version of the app, in one value). */
export function sealedFileOf(bytes: Uint8Array): SealedFile {
  const chunkBytes = Math.max(1, bytes.length);
  return new SealedFile({ size: bytes.length, chunkBytes, read: async () => bytes });
}

export class SealedFiles {
  private readonly chunkBytes: number;
  private readonly now: () => number;
  private index: Promise<Map<string, SealedFileInfo>> | null = null;

  constructor(private readonly o: SealedFilesOptions) {
    this.chunkBytes = o.chunkBytes ?? KEPT_CHUNK_BYTES;
    this.now = o.now ?? (() => Date.now());
  }

  /** Keeps `source` as file `id`, replacing what was kept under that id. */
  async put(id: string, source: Uint8Array | BlobLike): Promise<SealedFileInfo> {
    const { rows, historyKey: key, space } = this.o;
    const name = await this.o.name(id);
    await this.removeNamed(name);
    (await this.index)?.delete(id);
    const size = source instanceof Uint8Array ? source.length : source.size;
    const h: Header = {
      v: 1,
      id,
      size,
      keptAt: this.now(),
      chunks: Math.ceil(size / this.chunkBytes),
      chunkBytes: this.chunkBytes,
      gen: b64(randomBytes(12)),
      complete: false,
    };
    await rows.put(name, await sealAtRest(key, h, headCtx(space, name)));
    for (let n = 0; n < h.chunks; n++) {
      const start = n * h.chunkBytes;
      const end = Math.min(size, start + h.chunkBytes);
      const bytes = source instanceof Uint8Array ? source.subarray(start, end) : new Uint8Array(await source.slice(start, end).arrayBuffer());
      if (bytes.length !== end - start) {
        await this.removeNamed(name);
        throw new SdkError('invalid', { message: 'The file changed while it was being kept; attach it again.' });
      }
      await rows.put(`${name}.${n}`, await sealAtRest(key, bytes, chunkCtx(space, h, n)));
    }
    h.complete = true;
    await rows.put(name, await sealAtRest(key, h, headCtx(space, name)));
    const info = { id, size, keptAt: h.keptAt };
    (await this.index)?.set(id, info);
    return info;
  }

  /** File `id`, or undefined when none is kept (or its header does not open); its chunks are opened as they are read. */
  async open(id: string): Promise<SealedFile | undefined> {
    const name = await this.o.name(id);
    const h = await this.header(name);
    if (!h?.complete || h.id !== id) return undefined;
    const { rows, historyKey: key, space } = this.o;
    let last: { n: number; bytes: Uint8Array } | null = null;
    return new SealedFile({
      size: h.size,
      chunkBytes: h.chunkBytes,
      read: async (n) => {
        if (last?.n === n) return last.bytes;
        const sealed = await rows.get(`${name}.${n}`);
        if (!sealed) throw damaged();
        let bytes: unknown;
        try {
          bytes = await openAtRest(key, sealed, chunkCtx(space, h, n));
        } catch (e) {
          throw damaged(e);
        }
        const want = Math.min(h.chunkBytes, h.size - n * h.chunkBytes);
        if (!(bytes instanceof Uint8Array) || bytes.length !== want) throw damaged();
        last = { n, bytes };
        return bytes;
      },
    });
  }

  /**
   * Every file kept whole, oldest first. The headers are read once; after that this object's own
   * put() and remove() keep the list, so a budget check does not open every header again.
   */
  async list(): Promise<SealedFileInfo[]> {
    this.index ??= this.readIndex();
    const index = await this.index;
    return [...index.values()].sort((a, b) => a.keptAt - b.keptAt || (a.id < b.id ? -1 : 1));
  }

  async remove(id: string): Promise<void> {
    await this.removeNamed(await this.o.name(id));
    (await this.index)?.delete(id);
  }

  /** Drops the oldest files until the rest hold at most `budget` bytes; returns the ids dropped. */
  async trim(budget: number): Promise<string[]> {
    const list = await this.list();
    let total = list.reduce((s, f) => s + f.size, 0);
    const dropped: string[] = [];
    for (const f of list) {
      if (total <= budget) break;
      await this.remove(f.id);
      total -= f.size;
      dropped.push(f.id);
    }
    return dropped;
  }

  /** Removes what a put cut short left (files whose header says incomplete, an hour after they began); returns how many. */
  async sweep(): Promise<number> {
    let n = 0;
    for (const name of await this.headerNames()) {
      const h = await this.header(name);
      if (h && !h.complete && this.now() - h.keptAt > ABANDONED_MS) {
        await this.removeNamed(name);
        n++;
      }
    }
    return n;
  }

  private async readIndex(): Promise<Map<string, SealedFileInfo>> {
    const out = new Map<string, SealedFileInfo>();
    for (const name of await this.headerNames()) {
      const h = await this.header(name);
      if (h?.complete) out.set(h.id, { id: h.id, size: h.size, keptAt: h.keptAt });
    }
    return out;
  }

  private async headerNames(): Promise<string[]> {
    const p = this.o.prefix;
    return (await this.o.rows.names(p)).filter((k) => !k.slice(p.length).includes('.'));
  }

  private async header(name: string): Promise<Header | undefined> {
    const sealed = await this.o.rows.get(name);
    if (!sealed) return undefined;
    try {
      const h = await openAtRest(this.o.historyKey, sealed, headCtx(this.o.space, name));
      return isHeader(h) ? h : undefined;
    } catch {
      return undefined; // a header that does not open is as if absent
    }
  }

  private async removeNamed(name: string): Promise<void> {
    await this.o.rows.removePrefix(`${name}.`);
    await this.o.rows.remove(name);
  }
}

/** Files waiting for their upload (the SDK's AttachmentFiles), kept as SealedFiles. */
export class SealedAttachmentFiles implements AttachmentFiles {
  constructor(readonly files: SealedFiles) {}

  async put(id: string, file: KeptFile): Promise<void> {
    await this.files.put(id, file);
  }

  get(id: string): Promise<SealedFile | undefined> {
    return this.files.open(id);
  }

  remove(id: string): Promise<void> {
    return this.files.remove(id);
  }
}
