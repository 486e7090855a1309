/**
 * The files kept on this device (keptfiles.ts) as the SDK's history export and transfer read and
 * write them (KeptFilesSource): a history file or a transfer carries the ones the history names,
 * and puts received ones back here, sealed like every kept file.
 */
import type { ConversationStore, KeptFile, KeptFilesSource } from '@svc/sdk';
import type { KeptFiles } from './keptfiles.js';

/**
 * `list()` names the files the history's messages point at; the SDK asks `get()` for each, and one
 * this device never kept answers undefined and is left out.
 */
export function keptSource(files: KeptFiles, store: ConversationStore): KeptFilesSource {
  const own = files as KeptFiles & Partial<Pick<KeptFilesSource, 'list'>>;
  return {
    async list() {
      if (typeof own.list === 'function') return own.list();
      return [...new Set((await store.all()).flatMap((r) => (r.attachment ? [r.attachment.id] : [])))];
    },
    get: (id) => files.get(id),
    async put(id: string, file: KeptFile) {
      await files.put(id, file instanceof Uint8Array ? file : new Uint8Array(await file.arrayBuffer()));
    },
  };
}
