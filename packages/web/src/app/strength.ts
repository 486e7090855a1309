/**
 * The password rule for new accounts. A password cannot be reset (it unlocks the identity key,
 * docs/CRYPTO.md), and a stolen database lets anyone try guesses offline against the Argon2id
 * hash, so "Create account" refuses passwords shorter than MIN_LENGTH or that zxcvbn rates below
 * MIN_SCORE. Signing in never applies it: an account made elsewhere keeps its password.
 *
 * The estimator (zxcvbn-ts with its dictionaries, a few hundred kB) runs in a worker started with
 * the first password to rate, which loads it with import(): the main bundle does not carry it,
 * and the page stays responsive while it rates.
 */
import { scriptUrl } from './script-urls.js';
import strengthWorker from './strength.worker.ts?worker&url';
import type { Strength } from './strength-rating.js';

export type { Strength } from './strength-rating.js';

export const MIN_LENGTH = 8;
export const MIN_SCORE = 2;

const VERDICTS = ['Very weak', 'Weak', 'Fair', 'Strong', 'Very strong'] as const;

type Answer = { id: number; strength: Strength } | { id: number; error: string };

let worker: Worker | null = null;
let nextId = 0;
const pending = new Map<number, { resolve: (strength: Strength) => void; reject: (error: Error) => void }>();

function failAll(message: string): void {
  worker?.terminate();
  worker = null;
  for (const waiting of pending.values()) waiting.reject(new Error(message));
  pending.clear();
}

/** Rates `password`; `related` (the nick) counts as known to an attacker. A failed worker is started again on the next call. */
export function rate(password: string, related: string[]): Promise<Strength> {
  if (!worker) {
    worker = new Worker(scriptUrl(strengthWorker), { type: 'module', name: 'password-strength' });
    worker.onmessage = (event: MessageEvent<Answer>) => {
      const data = event.data;
      if (!('strength' in data)) return failAll(data.error); // the estimator did not load: the next call starts afresh
      pending.get(data.id)?.resolve(data.strength);
      pending.delete(data.id);
    };
    worker.onerror = (e) => failAll(e.message || 'the password check failed');
  }
  const id = ++nextId;
  const answer = new Promise<Strength>((resolve, reject) => pending.set(id, { resolve, reject }));
  worker.postMessage({ id, password, related });
  return answer;
}

/** Ends the worker (after signing in or up): its dictionaries take a few MB. */
export function stopRating(): void {
  failAll('stopped');
}

function length(password: string): number {
  return [...password].length;
}

/** The score shown: a password under the minimum length never looks better than "Weak". */
export function shownScore(password: string, strength: Strength): number {
  return length(password) < MIN_LENGTH ? Math.min(strength.score, 1) : strength.score;
}

/**
 * One short line under the meter: the verdict, and for a refused password the first thing to fix
 * (the refusal itself gives all of zxcvbn's advice).
 */
export function verdict(password: string, strength: Strength): string {
  const name = VERDICTS[shownScore(password, strength)] ?? VERDICTS[0];
  if (length(password) < MIN_LENGTH) return `${name}: use at least ${MIN_LENGTH} characters.`;
  if (strength.score < MIN_SCORE) return `${name}: ${strength.warning ?? strength.suggestions[0] ?? 'easy to guess.'}`;
  return `${name}.`;
}

/** Why "Create account" refuses `password`, or null when it is strong enough. */
export function weakness(password: string, strength: Strength): string | null {
  const advice = [strength.warning, ...strength.suggestions].filter(Boolean).join(' ');
  if (length(password) < MIN_LENGTH) return `Use at least ${MIN_LENGTH} characters.${advice ? ` ${advice}` : ''}`;
  if (strength.score < MIN_SCORE) return `This password is too easy to guess. ${advice || 'Add more words that are less common.'}`;
  return null;
}
