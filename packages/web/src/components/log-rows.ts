/**
 * How the message log's rows relate: which messages share a group's head, and a row that only
 * changed its status, patched in place rather than drawn again (messagelog.ts).
 */
import type { ChatMessage } from '@svc/sdk';
import { dayKey } from './format.js';

/** Messages of one sender closer than this in time share one head (name and time). */
export const GROUP_MS = 5 * 60_000;

export const NEW_MESSAGES = 'New messages';

/** Whether `m` continues the group of `prev`, the record before it in the log. */
export function continues(prev: ChatMessage | undefined, m: ChatMessage): boolean {
  return (
    !!prev &&
    prev.kind !== 'event' &&
    m.kind !== 'event' &&
    prev.from === m.from &&
    m.ts >= prev.ts &&
    m.ts - prev.ts < GROUP_MS &&
    dayKey(prev.ts) === dayKey(m.ts)
  );
}

const STATUS = '[role="status"]';

/** Gives `row` the status of `drawn` when that is all that differs between them; false otherwise. */
export function patchedInPlace(row: HTMLLIElement, drawn: HTMLLIElement): boolean {
  const now = row.querySelector(STATUS);
  const next = drawn.querySelector(STATUS);
  if (!now || !next) return row.isEqualNode(drawn);
  const probe = row.cloneNode(true) as HTMLLIElement;
  probe.querySelector(STATUS)!.replaceWith(next.cloneNode(true));
  if (!probe.isEqualNode(drawn)) return false;
  if (!now.isEqualNode(next)) now.replaceWith(next);
  return true;
}
