/**
 * One read-modify-write of a store's named value at a time: the disappearing messages index and
 * the pin index are changed both by arriving messages and by a history import, which run apart.
 */
import type { ConversationStore } from './store.js';

const queues = new WeakMap<ConversationStore, Promise<unknown>>();

/** Runs `f` after every earlier locked change of `store` has finished. */
export function withMeta<T>(store: ConversationStore, f: () => Promise<T>): Promise<T> {
  const prev = queues.get(store) ?? Promise.resolve();
  const run = prev.then(f, f);
  queues.set(
    store,
    run.catch(() => undefined),
  );
  return run;
}

/** `(sentAt, mid)` order: the change every device takes as the later one, whatever order they came in. */
export function isLater(a: { sentAt: number; mid?: string }, b: { sentAt: number; mid?: string }): boolean {
  return a.sentAt > b.sentAt || (a.sentAt === b.sentAt && (a.mid ?? '') > (b.mid ?? ''));
}

/**
 * The `sentAt` of a change made here now, given the latest change of the same thing this device
 * holds: later than that one even when this device's clock runs behind the device that made it (each
 * device's server-corrected clock is good to about a second only), so that a change made after
 * seeing another is taken as the later one everywhere.
 */
export function stampAfter(now: number, seen: number | undefined): number {
  return seen === undefined ? now : Math.max(now, seen + 1);
}
