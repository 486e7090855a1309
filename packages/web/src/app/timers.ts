/** The longest a browser timer waits (setTimeout overflows past 2^31 ms); a later deadline is looked at again then. */
export const MAX_TIMER_MS = 24 * 60 * 60_000;
