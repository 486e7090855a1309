/**
 * Disappearing messages. A chat's timer (the `timer` plaintext: Off, 30 seconds … 4 weeks) may be
 * changed by any member; every change is a line of the chat's log ("alice set disappearing
 * messages to 1 day", "alice turned off disappearing messages"), and the change with the greatest
 * (sentAt, mid) is the chat's setting on every device, whatever order changes came in.
 *
 * A message sent while the timer is on carries it (`expire`, seconds). It expires `expire` after
 * this account first saw it (`seenAt`): for its sender, from sending; for a reader, from the moment
 * the app first showed it (markSeen), or from the read receipt of another of the account's devices
 * that showed it earlier. An expired message is cut to a tombstone (`expired`: no text, attachment,
 * reactions or pin; kept so that no late copy brings it back), and is never exported or transferred.
 *
 * Stored: the chat's setting among the store's named values (`timer:<chat>`); the deadlines of the
 * messages whose clock runs, as an index (`expiry.index`, [deadline, id] pairs, soonest first), so
 * that the next expiry is found without reading the history, also at the next start.
 */
import type { ChatId } from '../envelopes.js';
import { isLater, withMeta } from './meta-lock.js';
import type { ChatMessage } from './model.js';
import type { ConversationStore } from './store.js';
import { timerLabel } from '../wire/timer-values.js';

export { TIMER_CHOICES, TIMER_SECONDS, isTimerSeconds, timerLabel, type TimerSeconds } from '../wire/timer-values.js';

export const timerKey = (chat: ChatId): string => `timer:${chat}`;
export const K_EXPIRY_INDEX = 'expiry.index';

/** A chat's timer as its last change left it; `seconds` 0 = off (also when nobody ever set it). */
export interface TimerSetting {
  seconds: number;
  /** Who changed it last, when (sender's clock), and that change's mid. */
  by?: string;
  sentAt: number;
  mid?: string;
}

/** The log line of a timer change by `nick`. */
export function timerText(nick: string, seconds: number): string {
  return seconds === 0 ? `${nick} turned off disappearing messages` : `${nick} set disappearing messages to ${timerLabel(seconds)}`;
}

/** The chat's timer as this device knows it. */
export async function chatTimer(store: ConversationStore, chat: ChatId): Promise<TimerSetting> {
  return ((await store.getMeta(timerKey(chat))) as TimerSetting | undefined) ?? { seconds: 0, sentAt: 0 };
}

/** Takes a timer change if it is later than the one held; returns whether the setting changed. */
export function applyTimer(store: ConversationStore, chat: ChatId, change: TimerSetting): Promise<boolean> {
  return withMeta(store, async () => {
    const cur = (await store.getMeta(timerKey(chat))) as TimerSetting | undefined;
    if (cur && !isLater(change, cur)) return false;
    await store.putMeta(timerKey(chat), change);
    return true;
  });
}

/** When `m` expires (ms), if its clock runs: it carries a timer and was seen. */
export function deadline(m: ChatMessage): number | undefined {
  return m.expire && m.seenAt !== undefined && !m.expired ? m.seenAt + m.expire * 1000 : undefined;
}

/** Whether `m` carries a timer that has run out at `now` (or was cut already). */
export function isExpired(m: ChatMessage, now: number): boolean {
  const at = deadline(m);
  return !!m.expired || (at !== undefined && at <= now);
}

type Entry = [at: number, id: string];

async function readIndex(store: ConversationStore): Promise<Entry[]> {
  return ((await store.getMeta(K_EXPIRY_INDEX)) as Entry[] | undefined) ?? [];
}

/** Adds (or moves) the deadlines of `records` whose clock runs to the index. */
export function trackExpiry(store: ConversationStore, records: readonly ChatMessage[]): Promise<void> {
  const add = new Map<string, number>();
  for (const m of records) {
    const at = deadline(m);
    if (at !== undefined) add.set(m.id, at);
  }
  if (add.size === 0) return Promise.resolve();
  return withMeta(store, async () => {
    const list = (await readIndex(store)).filter(([, id]) => !add.has(id));
    for (const [id, at] of add) list.push([at, id]);
    list.sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : 1));
    await store.putMeta(K_EXPIRY_INDEX, list);
  });
}

/** The message that expires next, and when (ms); null when no clock runs. */
export async function nextExpiry(store: ConversationStore): Promise<{ id: string; at: number } | null> {
  const first = (await readIndex(store))[0];
  return first ? { id: first[1], at: first[0] } : null;
}

/** What expireDue cut. */
export interface Expired {
  /** The tombstones the records became (search index entries, notifications and views of them go). */
  records: ChatMessage[];
  /** Attachment ids of the expired messages: any copy of their files kept on this device is to be deleted. */
  attachments: string[];
}

/** The record `m` becomes when it expires: nothing of what it said stays. */
export function tombstone(m: ChatMessage): ChatMessage {
  const t: ChatMessage = { id: m.id, chat: m.chat, ts: m.ts, from: m.from, sentAt: m.sentAt, kind: m.kind, deleted: true, expired: true };
  if (m.mid !== undefined) t.mid = m.mid;
  if (m.state !== undefined) t.state = m.state;
  return t;
}

/** Cuts every message whose deadline is at or before `now` to its tombstone; actions waiting for them go too. */
export function expireDue(store: ConversationStore, now: number): Promise<Expired> {
  return withMeta(store, async () => {
    const list = await readIndex(store);
    const out: Expired = { records: [], attachments: [] };
    let i = 0;
    const keep: Entry[] = [];
    for (; i < list.length && list[i]![0] <= now; i++) {
      const m = await store.get(list[i]![1]);
      const at = m ? deadline(m) : undefined;
      if (!m || at === undefined) continue;
      if (at > now) {
        keep.push([at, m.id]);
        continue;
      }
      if (m.attachment) out.attachments.push(m.attachment.id);
      const t = tombstone(m);
      await store.put(t);
      await store.takePending(m.id);
      out.records.push(t);
    }
    if (i > 0)
      await store.putMeta(
        K_EXPIRY_INDEX,
        [...keep, ...list.slice(i)].sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : 1)),
      );
    return out;
  });
}
