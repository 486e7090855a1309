/**
 * The answer barrier of a write (docs/DESIGN.md, "Durability"): a store may settle a write before
 * the disk has it, so that its events go out at once; the caller is answered only once the write
 * is durable, and fails if it may have been lost.
 */
import type { Store } from '../store/types.js';

/**
 * Runs `action` (given `arg`, so that a request's handler needs no closure made for it) and settles
 * with its result once everything it wrote is durable; rejects if any of it was lost.
 */
export async function whenDurable<A, T>(store: Store, action: (arg: A) => Promise<T>, arg: A): Promise<T>;
export async function whenDurable<T>(store: Store, action: () => Promise<T>): Promise<T>;
export async function whenDurable<A, T>(store: Store, action: (arg?: A) => Promise<T>, arg?: A): Promise<T> {
  const mark = store.lossMark();
  const result = await action(arg);
  await store.durable(mark);
  return result;
}
