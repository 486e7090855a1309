/**
 * The answer barrier of a write (docs/DESIGN.md): a store may settle a write before
 * the disk has it, so that its events go out at once; the caller is answered only once the write
 * is durable, and fails if it may have been lost.
 */
import type { Store } from '../store/types.js';

/** Runs `action` and settles with its result once everything it wrote is durable; rejects if any of it was lost. */
export async function whenDurable<T>(store: Store, action: () => Promise<T>): Promise<T> {
  const mark = store.lossMark();
  const result = await action();
  await store.durable(mark);
  return result;
}

/**
 * Runs `action` and settles with its result once everything it wrote is committed (it survives
 * the process ending) though perhaps not yet synced: only for an attachment's part, whose
 * finish waits for `whenDurable` (docs/DESIGN.md).
 */
export async function whenCommitted<T>(store: Store, action: () => Promise<T>): Promise<T> {
  const mark = store.lossMark();
  const result = await action();
  await store.committed(mark);
  return result;
}
