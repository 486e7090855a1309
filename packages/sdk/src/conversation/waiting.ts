/**
 * What waits for its target, and how much of it may. An edit, deletion, reaction or receipt that
 * arrives before the message it names waits in the store (rules.ts); anyone can name ids that
 * never arrive, so waiting is bounded:
 * - one row per action and target, holding only what that one target needs (a receipt's status,
 *   not its list of up to 256 ids);
 * - at most WAITING_PER_SENDER_CHAT rows per sender and chat, and WAITING_TOTAL in all;
 * - a sender this account never chatted with (no message in the DM either way, no shared room)
 *   gets WAITING_PER_STRANGER rows in all, whatever the chat;
 * - a row goes after WAITING_TTL_MS, purged when the app starts and when a cap is reached (then
 *   only once a row may have expired, since a purge opens every row).
 * A full cap refuses the new action and keeps what waits: an attacker at the cap then causes no
 * writes at all, and what waits from before (most likely for history another device is sending)
 * is not pushed out by a flood. The server's contact list is no sign of knowing someone: the
 * first message of a stranger creates it.
 */
import type { ChatId } from '../envelopes.js';
import type { PendingAction } from './model.js';
import type { Plain } from '../wire/plaintext.js';
import type { ConversationStore } from './store.js';

/** Waiting actions per sender and chat, for someone this account chatted with. */
export const WAITING_PER_SENDER_CHAT = 64;
/** Waiting actions per sender, in all chats, for someone this account never chatted with. */
export const WAITING_PER_STRANGER = 8;
/** Waiting actions on the device, from everyone. */
export const WAITING_TOTAL = 1024;
/** A waiting action whose target has not come in this long is dropped. */
export const WAITING_TTL_MS = 7 * 24 * 60 * 60_000;

export interface WaitContext {
  store: ConversationStore;
  /** This account's nick. */
  me: string;
  /** Whether `nick` is in the chat now (a DM: oneself and the peer; a room: its members). */
  isMember(chat: string, nick: string): boolean;
  /** Whether `nick` shares any room with this account (by default only the chat at hand is asked). */
  sharesRoom?(nick: string): boolean;
  /** This device's clock, for when a row began to wait and what has expired (default Date.now). */
  now?(): number;
}

const now = (c: WaitContext): number => (c.now ? c.now() : Date.now());

/** The part of an action its one target needs: a receipt names only that target; the plaintext id is not kept. */
export function forTarget(p: Plain, target: string): Plain {
  if (p.type === 'receipt') return { v: 1, type: 'receipt', ids: [target], status: p.status, sentAt: p.sentAt };
  // A pin's mid decides which of two changes at the same sentAt holds (message-pins.ts).
  if (p.type === 'pin') return p;
  const { mid: _mid, ...rest } = p;
  return rest;
}

/** Whether this account has chatted with `nick`: a shared room, or a message in their DM either way. */
export async function knows(c: WaitContext, nick: string, chat: ChatId): Promise<boolean> {
  if (nick === c.me || c.sharesRoom?.(nick) || (chat.startsWith('room:') && c.isMember(chat, nick))) return true;
  return (await c.store.chat(`dm:${nick}` as ChatId, { limit: 1 })).length > 0;
}

/** Per store: no waiting row can expire before this time (the oldest left by the last purge, plus the TTL). */
const nextExpiry = new WeakMap<ConversationStore, number>();

/** Drops what waited longer than WAITING_TTL_MS (the app calls it at start); returns how many went. */
export async function purgeExpired(c: Pick<WaitContext, 'store' | 'now'>): Promise<number> {
  const t = now(c as WaitContext);
  const r = await c.store.purgePending(t - WAITING_TTL_MS);
  // Rows added later began to wait later still.
  nextExpiry.set(c.store, (r.oldest ?? t) + WAITING_TTL_MS);
  return r.removed;
}

/** A purge opens every waiting row: at a cap, it runs only when some row may have expired, not on every action of a flood. */
async function purgeAtCap(c: WaitContext): Promise<boolean> {
  if (now(c) < (nextExpiry.get(c.store) ?? -Infinity)) return false;
  return (await purgeExpired(c)) > 0;
}

/** Keeps `p` until its target arrives, within the caps above; returns why it was refused, or undefined when kept. */
export async function keepWaiting(c: WaitContext, p: Omit<PendingAction, 'at'>): Promise<string | undefined> {
  const known = await knows(c, p.from, p.chat);
  const full = async (): Promise<string | undefined> => {
    const mine = known ? await c.store.countPending({ from: p.from, chat: p.chat }) : await c.store.countPending({ from: p.from });
    if (mine >= (known ? WAITING_PER_SENDER_CHAT : WAITING_PER_STRANGER))
      return known ? 'too many waiting in this chat' : 'too many waiting from a stranger';
    if ((await c.store.countPending()) >= WAITING_TOTAL) return 'too many waiting';
    return undefined;
  };
  let why = await full();
  // What expired makes room; reading every row happens only at a cap, so not on every action.
  if (why && (await purgeAtCap(c))) why = await full();
  if (why) return why;
  await c.store.addPending({ ...p, plain: forTarget(p.plain, p.target), at: now(c) });
  return undefined;
}
