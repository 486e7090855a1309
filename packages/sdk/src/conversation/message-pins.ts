/**
 * Pinned messages of a chat (the `pin` plaintext; not to be confused with ../pins.ts, the trust on
 * first use of people's keys). Any member of a room, and either person of a DM, may pin or unpin
 * any message of the chat that is a text, file, photo or voice message; pins reach every member.
 *
 * The state of one message is its last pin or unpin, by (sentAt, mid): every device ends at the same
 * state whatever order the changes came in, and a pin and an unpin that cross resolve the same
 * way everywhere. A change made here is stamped later than every one of the chat this device
 * holds, so one made after seeing another is the later everywhere, whatever the devices' clocks. A pin of a message not here yet waits for it like an edit (waiting.ts); a
 * deleted or expired message is never listed, whenever its pin came. The pinned list shows each
 * message as it stands (an edit changes the text shown), the most recently pinned first.
 *
 * Stored: the state on the message's record (`pin`, carried by history export and transfer), and
 * per chat the ids ever pinned (`pins:<chat>` among the store's named values), so listing a chat's
 * pins reads those records only.
 */
import type { ChatId } from '../envelopes.js';
import { isLater, stampAfter, withMeta } from './meta-lock.js';
import { isShown, type ChatMessage } from './model.js';
import type { PinPlain } from '../wire/plaintext.js';
import type { ConversationStore } from './store.js';

export const pinKey = (chat: ChatId): string => `pins:${chat}`;

/** Whether `m` can be pinned: a message a person sent (text or attachment), settled, not deleted or expired. */
export function isPinnable(m: ChatMessage): boolean {
  return m.kind === 'text' && !m.deleted && !m.expired && (m.state === undefined || m.state === 'sent');
}

/** Applies a pin or unpin of `from` to `m` in place; returns why it was refused, or undefined. */
export function applyPin(m: ChatMessage, from: string, p: Pick<PinPlain, 'op' | 'sentAt' | 'mid'>): string | undefined {
  if (m.kind !== 'text' || m.deleted || m.expired) return 'not a pinnable message';
  const change = { op: p.op, by: from, sentAt: p.sentAt, mid: p.mid ?? '' };
  if (m.pin && !isLater(change, m.pin)) return 'older pin';
  m.pin = change;
  return undefined;
}

/** Remembers that `ids` of `chat` were pinned or unpinned (the candidates pinnedMessages reads). */
export function notePinned(store: ConversationStore, chat: ChatId, ids: readonly string[]): Promise<void> {
  return withMeta(store, async () => {
    const list = ((await store.getMeta(pinKey(chat))) as string[] | undefined) ?? [];
    const add = ids.filter((id) => !list.includes(id));
    if (add.length > 0) await store.putMeta(pinKey(chat), [...list, ...add]);
  });
}

/**
 * The `sentAt` for a pin or unpin made here now: later than every pin and unpin of the chat this
 * device holds. The devices' server-corrected clocks agree to about a second only, so a pin made
 * after seeing another one could otherwise be stamped earlier than it, and be listed below it, or
 * lose to it, on every device.
 */
export async function pinStamp(store: ConversationStore, chat: ChatId, now: number): Promise<number> {
  const ids = ((await store.getMeta(pinKey(chat))) as string[] | undefined) ?? [];
  let seen: number | undefined;
  for (const id of ids) {
    const at = (await store.get(id))?.pin?.sentAt;
    if (at !== undefined && (seen === undefined || at > seen)) seen = at;
  }
  return stampAfter(now, seen);
}

/** The chat's pinned messages as they stand, the most recently pinned first. */
export async function pinnedMessages(store: ConversationStore, chat: ChatId): Promise<ChatMessage[]> {
  const ids = ((await store.getMeta(pinKey(chat))) as string[] | undefined) ?? [];
  const out: ChatMessage[] = [];
  for (const id of ids) {
    const m = await store.get(id);
    if (m && m.chat === chat && m.pin?.op === 'pin' && !m.deleted && isShown(m)) out.push(m);
  }
  return out.sort((a, b) => (isLater(a.pin!, b.pin!) ? -1 : isLater(b.pin!, a.pin!) ? 1 : 0));
}
