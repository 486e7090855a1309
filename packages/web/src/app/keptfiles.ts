/**
 * The files this device keeps, sealed like the messages: the SDK's SealedFiles (a header and 1 MiB
 * chunks, each sealed under the history key with an AAD naming the file and the chunk's place) in
 * the `kv` store, under names made of a tag of the attachment id.
 * - KeptFiles: received files, kept once downloaded, so the history keeps them after the service
 *   dropped its copy. They take at most a byte budget (keptBudget), the oldest dropped first; a
 *   dropped file is downloaded again when it is next opened, while the service still has it.
 * - uploadFiles(): a file sent from this device, from the moment it is sent until its upload has
 *   finished, so a reload or a cut network resumes the upload instead of losing the file.
 * A file kept by an older version of the app (one sealed value, `file.` and the tag) is still
 * read, and moved into chunks when it is.
 */
import {
  isAttachmentPlain,
  openAtRest,
  SealedAttachmentFiles,
  SealedFiles,
  sealedFileOf,
  type BlobLike,
  type OutboxItem,
  type Sealed,
  type SealedFile,
  type SealedFileInfo,
  type SealedRows,
} from '@svc/sdk';
import { STORES, type Db } from './idb.js';
import type { Tags } from './tags.js';

/** The `kv` store as the rows of SealedFiles. */
class KvRows implements SealedRows {
  constructor(private readonly db: Db) {}
  get(name: string): Promise<Sealed | undefined> {
    return this.db.get<Sealed>(STORES.kv, name);
  }
  put(name: string, value: Sealed): Promise<void> {
    return this.db.put(STORES.kv, value, name);
  }
  remove(name: string): Promise<void> {
    return this.db.delete(STORES.kv, name);
  }
  removePrefix(prefix: string): Promise<void> {
    return this.db.deletePrefix(STORES.kv, prefix);
  }
  names(prefix: string): Promise<string[]> {
    return this.db.keysWithPrefix(STORES.kv, prefix);
  }
}

/** The most bytes of received files a device keeps. */
export const KEPT_BYTES_MAX = 2 ** 30;

/**
 * The byte budget of received files: 1 GiB, or a quarter of what the browser lets this site store
 * when that is less. The browser tests set a smaller one (`window.__svcKeptBytes`) to see it work.
 */
export async function keptBudget(): Promise<number> {
  const quota = (await navigator.storage?.estimate?.().catch(() => undefined))?.quota;
  const budget = quota ? Math.min(KEPT_BYTES_MAX, Math.floor(quota / 4)) : KEPT_BYTES_MAX;
  const smaller = (globalThis as { __svcKeptBytes?: unknown }).__svcKeptBytes;
  return typeof smaller === 'number' && smaller >= 0 ? Math.min(budget, smaller) : budget;
}

export class KeptFiles {
  private readonly sealed: SealedFiles;
  private budget: Promise<number> | null = null;
  private persistAsked = false;

  constructor(
    private readonly db: Db,
    private readonly key: CryptoKey,
    private readonly tags: Tags,
    private readonly budgetOf: () => Promise<number> = keptBudget,
  ) {
    this.sealed = new SealedFiles({
      rows: new KvRows(db),
      historyKey: key,
      space: 'kept',
      prefix: 'kept.',
      name: async (id) => `kept.${await this.tag(id)}`,
    });
  }

  private tag(attachmentId: string): Promise<string> {
    return this.tags.of(`file|${attachmentId}`);
  }

  /** The name an older version of the app kept a file under, in one sealed value. */
  private async oldName(attachmentId: string): Promise<string> {
    return `file.${await this.tag(attachmentId)}`;
  }

  /** Every file kept here (attachment id, bytes, when it was kept), oldest first. */
  list(): Promise<SealedFileInfo[]> {
    return this.sealed.list();
  }

  /** The bytes kept here: how many files, how many bytes, and the budget they stay under. */
  async usage(): Promise<{ files: number; bytes: number; budget: number }> {
    const list = await this.list();
    return { files: list.length, bytes: list.reduce((s, f) => s + f.size, 0), budget: await this.limit() };
  }

  /** File `attachmentId`, read a chunk at a time; undefined when this device does not keep it. */
  async open(attachmentId: string): Promise<SealedFile | undefined> {
    const file = await this.sealed.open(attachmentId);
    if (file) return file;
    const name = await this.oldName(attachmentId);
    const sealed = await this.db.get<Sealed>(STORES.kv, name);
    if (!sealed) return undefined;
    const opened = await openAtRest(this.key, sealed, name).catch(() => undefined);
    if (!(opened instanceof Uint8Array)) return undefined;
    // Moved into chunks once read, so it is listed and counted against the budget.
    await this.sealed
      .put(attachmentId, opened)
      .then(() => this.db.delete(STORES.kv, name))
      .catch((e: unknown) => console.warn('moving a kept file:', e));
    return sealedFileOf(opened);
  }

  /** The whole file's bytes; undefined when this device does not keep it. Throws SdkError `attachment_corrupt` when a chunk does not open. */
  async get(attachmentId: string): Promise<Uint8Array | undefined> {
    return (await this.open(attachmentId))?.bytes();
  }

  /**
   * Keeps a file, then drops the oldest ones until the kept files fit the budget; false when the
   * file alone is over the budget (it is then not kept). The first file kept asks the browser to
   * make this site's storage persistent, so it is not evicted under storage pressure.
   */
  async put(attachmentId: string, file: Uint8Array | BlobLike): Promise<boolean> {
    const budget = await this.limit();
    const size = file instanceof Uint8Array ? file.length : file.size;
    if (size > budget) return false;
    await this.sealed.put(attachmentId, file);
    await this.sealed.trim(budget);
    void this.askPersist();
    return true;
  }

  /** Forgets file `attachmentId` (its message was deleted, or its chat). */
  async remove(attachmentId: string): Promise<void> {
    await this.sealed.remove(attachmentId);
    await this.db.delete(STORES.kv, await this.oldName(attachmentId));
  }

  /** Removes what a write cut short left behind. */
  async sweep(): Promise<void> {
    await this.sealed.sweep();
  }

  private limit(): Promise<number> {
    this.budget ??= this.budgetOf();
    return this.budget;
  }

  private async askPersist(): Promise<void> {
    if (this.persistAsked) return;
    this.persistAsked = true;
    const storage = typeof navigator === 'undefined' ? undefined : navigator.storage;
    if (!storage?.persist || (await storage.persisted().catch(() => true))) return;
    await storage.persist().catch(() => false);
  }
}

/** Where files wait for their upload (the SDK's AttachmentFiles): sealed in chunks until the upload finished. */
export function uploadFiles(db: Db, key: CryptoKey, tags: Tags): SealedAttachmentFiles {
  return new SealedAttachmentFiles(
    new SealedFiles({
      rows: new KvRows(db),
      historyKey: key,
      space: 'upload',
      prefix: 'upload.',
      name: async (id) => `upload.${await tags.of(`upload|${id}`)}`,
    }),
  );
}

/**
 * Removes waiting files whose message is no longer in the outbox (`pending`): the tab closed
 * between the end of an upload (or the message's deletion) and the removal of its file.
 */
export async function dropUploadsGone(uploads: SealedAttachmentFiles, pending: readonly OutboxItem[]): Promise<void> {
  const queued = new Set(pending.flatMap((item) => (isAttachmentPlain(item.plain) ? [item.plain.id] : [])));
  for (const file of await uploads.files.list()) if (!queued.has(file.id)) await uploads.remove(file.id);
}
