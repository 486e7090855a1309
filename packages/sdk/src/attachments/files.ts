/**
 * Where the app keeps a file between the moment the person sends it and the end of its upload,
 * so that a reload or a crash does not lose it: the web app keeps it in IndexedDB (sealed like the
 * rest of the history); MemoryFiles serves Node programs and the tests. Only sources that can be
 * kept are accepted here (a Blob or bytes, not a stream).
 */
import type { BlobLike } from './source.js';

export type KeptFile = BlobLike | Uint8Array;

export interface AttachmentFiles {
  put(attachmentId: string, file: KeptFile): Promise<void>;
  get(attachmentId: string): Promise<KeptFile | undefined>;
  remove(attachmentId: string): Promise<void>;
}

/**
 * The files kept on a device by attachment id (the web app's received files): what a history
 * export or transfer carries, and where an import or a transfer puts them back.
 */
export interface KeptFilesSource {
  /** The attachment ids of every file kept. */
  list(): Promise<string[]>;
  get(attachmentId: string): Promise<KeptFile | undefined>;
  put(attachmentId: string, file: KeptFile): Promise<void>;
}

export class MemoryFiles implements AttachmentFiles, KeptFilesSource {
  private readonly map = new Map<string, KeptFile>();

  async put(id: string, file: KeptFile): Promise<void> {
    this.map.set(id, file);
  }

  async get(id: string): Promise<KeptFile | undefined> {
    return this.map.get(id);
  }

  async remove(id: string): Promise<void> {
    this.map.delete(id);
  }

  async list(): Promise<string[]> {
    return [...this.map.keys()];
  }

  get size(): number {
    return this.map.size;
  }
}
