/**
 * Finished attachments kept in memory, newest first out last, up to a byte budget. A file is
 * fetched by its recipients within moments of its finish (a room's photo by every member), and
 * the finish has just read every part to hash it: keeping those bytes answers the downloads
 * without reading the store again. The store stays the authority: a download reads the
 * attachment's record first, so a file deleted or purged anywhere is refused whatever is cached
 * here, and a finished file never changes, so bytes cached under its SHA-256 cannot be stale.
 */
export class AttachmentCache {
  /** Map order is use order: the first entry is the least recently used. */
  private readonly files = new Map<string, { sha256: Buffer; bytes: Buffer }>();
  private held = 0;
  /** Bytes of files being read whole to be kept (reserve() to release()). */
  private gathering = 0;

  /** `maxBytes` 0 keeps nothing. */
  constructor(readonly maxBytes: number) {}

  /**
   * Whether a file of `size` bytes may be read whole to be kept: it fits, and the files being
   * gathered at once stay within the same budget, so finishes and downloads of many large files
   * at the same moment hold at most `maxBytes` more than they would hold streaming. A true answer
   * must be ended with release(size), kept or not.
   */
  reserve(size: number): boolean {
    if (size > this.maxBytes || this.gathering + size > this.maxBytes) return false;
    this.gathering += size;
    return true;
  }

  release(size: number): void {
    this.gathering -= size;
  }

  get(id: string, sha256: Uint8Array): Buffer | undefined {
    const f = this.files.get(id);
    if (!f) return undefined;
    if (!f.sha256.equals(sha256)) {
      this.drop(id);
      return undefined;
    }
    this.files.delete(id);
    this.files.set(id, f);
    return f.bytes;
  }

  put(id: string, sha256: Buffer, bytes: Buffer): void {
    if (bytes.length > this.maxBytes) return;
    this.drop(id);
    for (const [oldest, f] of this.files) {
      if (this.held + bytes.length <= this.maxBytes) break;
      this.files.delete(oldest);
      this.held -= f.bytes.length;
    }
    this.files.set(id, { sha256, bytes });
    this.held += bytes.length;
  }

  drop(id: string): void {
    const f = this.files.get(id);
    if (!f) return;
    this.files.delete(id);
    this.held -= f.bytes.length;
  }

  /** Bytes held now (the metrics show it). */
  get bytes(): number {
    return this.held;
  }
}
