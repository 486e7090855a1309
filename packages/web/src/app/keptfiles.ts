/**
 * Received files kept on this device, sealed like the messages: the bytes under the history key,
 * in the named-values store under a tag of the attachment id, with that name in the AAD so a file
 * cannot pass for another. The service drops its copy after its time to live; a file downloaded
 * once stays in the history here.
 */
import { openAtRest, sealAtRest, type Sealed } from '@svc/sdk';
import { STORES, type Db } from './idb.js';
import type { Tags } from './tags.js';

export class KeptFiles {
  constructor(
    private readonly db: Db,
    private readonly key: CryptoKey,
    private readonly tags: Tags,
  ) {}

  private async name(attachmentId: string): Promise<string> {
    return `file.${await this.tags.of(`file|${attachmentId}`)}`;
  }

  async get(attachmentId: string): Promise<Uint8Array | undefined> {
    const k = await this.name(attachmentId);
    const sealed = await this.db.get<Sealed>(STORES.kv, k);
    if (!sealed) return undefined;
    const v = await openAtRest(this.key, sealed, k);
    return v instanceof Uint8Array ? v : undefined;
  }

  async put(attachmentId: string, bytes: Uint8Array): Promise<void> {
    const k = await this.name(attachmentId);
    await this.db.put(STORES.kv, await sealAtRest(this.key, bytes, k), k);
  }
}
