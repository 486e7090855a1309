/**
 * The password rule for new accounts. A password cannot be reset (it unlocks the identity key,
 * docs/CRYPTO.md), and a stolen database lets anyone try guesses offline against the Argon2id
 * hash, so "Create account" refuses passwords shorter than MIN_LENGTH or that zxcvbn rates below
 * MIN_SCORE. Signing in never applies it: an account made elsewhere keeps its password.
 *
 * The estimator (zxcvbn-ts with its dictionaries, a few hundred kB) is loaded on demand, so the
 * main bundle does not carry it.
 */

export interface Strength {
  /** zxcvbn's score: 0 (too guessable) to 4 (very unguessable). */
  score: number;
  warning: string | null;
  suggestions: string[];
}

export type Checker = (password: string, related: string[]) => Strength;

export const MIN_LENGTH = 8;
export const MIN_SCORE = 2;

const VERDICTS = ['Very weak', 'Weak', 'Fair', 'Strong', 'Very strong'] as const;

let loading: Promise<Checker> | null = null;

/** The estimator, loaded once; a failed load is tried again on the next call. */
export function loadChecker(): Promise<Checker> {
  loading ??= import('./strength-check.js').then(
    (m) => m.check,
    (err: unknown) => {
      loading = null;
      throw err;
    },
  );
  return loading;
}

function length(password: string): number {
  return [...password].length;
}

/** The score shown: a password under the minimum length never looks better than "Weak". */
export function shownScore(password: string, s: Strength): number {
  return length(password) < MIN_LENGTH ? Math.min(s.score, 1) : s.score;
}

/** One line for the meter: the verdict, then zxcvbn's warning when the password is refused. */
export function verdict(password: string, s: Strength): string {
  const name = VERDICTS[shownScore(password, s)] ?? VERDICTS[0];
  const why = weakness(password, s);
  return why ? `${name}. ${why}` : `${name}.`;
}

/** Why "Create account" refuses `password`, or null when it is strong enough. */
export function weakness(password: string, s: Strength): string | null {
  const advice = [s.warning, ...s.suggestions].filter(Boolean).join(' ');
  if (length(password) < MIN_LENGTH) return `Use at least ${MIN_LENGTH} characters.${advice ? ` ${advice}` : ''}`;
  if (s.score < MIN_SCORE) return `This password is too easy to guess. ${advice || 'Add more words that are less common.'}`;
  return null;
}
