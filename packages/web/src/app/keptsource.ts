/**
 * The files kept on this device (keptfiles.ts) as the SDK's history export and transfer read and
 * write them (KeptFilesSource): a history file or a transfer carries them, and puts received ones
 * back here, sealed like every kept file.
 */
import type { KeptFile, KeptFilesSource } from '@svc/sdk';
import type { KeptFiles } from './keptfiles.js';

/** Every file kept here; `get()` hands the sealed file, read a chunk at a time as the SDK asks. */
export function keptSource(files: KeptFiles): KeptFilesSource {
  return {
    list: async () => (await files.list()).map((f) => f.id),
    get: (id) => files.open(id),
    async put(id: string, file: KeptFile) {
      await files.put(id, file);
    },
  };
}
