/**
 * Rates passwords off the main thread (see strength.ts): loading zxcvbn-ts's dictionaries takes
 * about a second of CPU and each rating a tenth of one, which would stall typing and clicks.
 * Messages in: {id, password, related}; out: {id, strength} or {id, error}, in order.
 */
import type { Strength } from './strength-rating.js';

interface Job {
  id: number;
  password: string;
  related: string[];
}

const scope = self as unknown as { onmessage: ((event: MessageEvent<Job>) => void) | null; postMessage(msg: unknown): void };

let checker: Promise<(password: string, related: string[]) => Strength> | null = null;

scope.onmessage = (event) => {
  const { id, password, related } = event.data;
  // The estimator is its own chunk, fetched with the first password to rate.
  checker ??= import('./strength-check.js').then((m) => m.check);
  checker.then(
    (check) => scope.postMessage({ id, strength: check(password, related) }),
    (err: unknown) => scope.postMessage({ id, error: err instanceof Error ? err.message : String(err) }),
  );
};
