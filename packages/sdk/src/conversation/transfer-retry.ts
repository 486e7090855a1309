/** How both sides of a history transfer wait out a failure of an archive's upload or download. */
import { isSdkError } from '../errors.js';

/** Failures waited out and tried again (the connection, the service's budget). */
const PASSING = new Set(['network', 'internal', 'bad_response', 'unauthenticated', 'rate_limited']);
const BACKOFF_MS = [1_000, 2_000, 5_000, 10_000, 30_000];

export const passing = (e: unknown): boolean => isSdkError(e) && PASSING.has(e.code);

/** The wait before try number `attempt` (from 0) after a passing failure. */
export const backoff = (attempt: number): number => BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)]!;

/** A failure as a person reads it. */
export const why = (e: unknown): string => (e instanceof Error ? e.message : String(e));
