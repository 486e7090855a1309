/**
 * zxcvbn-ts set up for the sign-up form. This module is only ever loaded with a dynamic import()
 * in strength.worker.ts, so its dictionaries stay out of the main bundle and are fetched on the
 * sign-in screen once a password is typed.
 *
 * Dictionaries: the common passwords and keyboard layouts of @zxcvbn-ts/language-common; from
 * @zxcvbn-ts/language-en only the English feedback texts (its word lists would add about 600 kB
 * compressed for little gain over the common-password list).
 */
import { ZxcvbnFactory } from '@zxcvbn-ts/core';
import { adjacencyGraphs, dictionary } from '@zxcvbn-ts/language-common';
import { translations } from '@zxcvbn-ts/language-en';
import type { Strength } from './strength-rating.js';

const zxcvbn = new ZxcvbnFactory({ dictionary, graphs: adjacencyGraphs, translations, useLevenshteinDistance: true });

/** How guessable `password` is; `related` (the nick) counts as known to an attacker. */
export function check(password: string, related: string[]): Strength {
  const result = zxcvbn.check(password, related);
  return { score: result.score, warning: result.feedback.warning || null, suggestions: result.feedback.suggestions };
}
