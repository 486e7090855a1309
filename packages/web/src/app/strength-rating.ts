/** What the estimator says of a password: the shape the worker answers with (strength.worker.ts). */
export interface Strength {
  /** zxcvbn's score: 0 (too guessable) to 4 (very unguessable). */
  score: number;
  warning: string | null;
  suggestions: string[];
}
