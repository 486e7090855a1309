/**
 * A conversation as a client keeps it: one record per message that a person sees (a text, a
 * message this client cannot show, a membership line), with everything the other plaintext types
 * did to it folded in (edits, deletion, reactions, receipts). Reactions, edits and the rest are not
 * records of their own: they change their target, or wait for it (PendingAction).
 */
import type { ChatId } from '../envelopes.js';
import type { AttachmentRef } from '../wire/attachment-plain.js';
import type { Plain, PlainInput } from '../wire/plaintext.js';

/** What a record shows: a text; an envelope that did not open; a type of a newer client; a membership line. */
export type MessageKind = 'text' | 'undecryptable' | 'unknown' | 'event';

/** One's own message on its way: in the outbox (`queued`, `sending`, `failed`), then `sent`. */
export type SendState = 'queued' | 'sending' | 'sent' | 'failed';

/**
 * Lines of a chat's log: membership ("carol joined", "dave left", "You were removed"), and a
 * change of the disappearing messages timer (`timer`: `nicks` holds who changed it, `seconds` the
 * new value, 0 = off; the record's `note` is the line's text).
 */
export interface MembershipEvent {
  what: 'joined' | 'left' | 'removed' | 'created' | 'owner' | 'timer';
  nicks: string[];
  seconds?: number;
}

/** The last pin or unpin of a message (message-pins.ts): the one with the greatest (sentAt, mid) holds on every device. */
export interface PinState {
  op: 'pin' | 'unpin';
  /** Who pinned or unpinned it. */
  by: string;
  sentAt: number;
  mid: string;
}

export interface ChatMessage {
  /** The envelope id (a ULID chosen by the sender). */
  id: string;
  chat: ChatId;
  /** Service acceptance time; while one's own message is unsent, the local estimate. */
  ts: number;
  from: string;
  /** The sender's clock when it was written. */
  sentAt: number;
  /** The plaintext's random id, the same across retries under a new envelope id. */
  mid?: string;
  kind: MessageKind;
  /** The text as it stands (after edits); absent once deleted, and for other kinds. */
  body?: string;
  /** Envelope id of the message this one replies to (the quote is looked up, never copied). */
  replyTo?: string;
  /** sentAt of the edit whose text `body` holds. */
  editedAt?: number;
  /** Deleted for everyone by its sender: the text is gone. */
  deleted?: boolean;
  /** Emoji → nicks that reacted with it, sorted. */
  reactions?: Record<string, string[]>;
  /** `${nick} ${emoji}` → sentAt of the reaction change applied last, so late ones do not win. */
  reactedAt?: Record<string, number>;
  /** One's own message: nicks whose devices hold it, and who have read it. */
  delivered?: string[];
  read?: string[];
  /** Another's message: what this account has reported back (receipts are sent once). */
  reported?: 'delivered' | 'read';
  /** One's own message: where it is on its way out. */
  state?: SendState;
  /** Why a message is undecryptable, of an unknown type, or not sent, in words. */
  note?: string;
  event?: MembershipEvent;
  /** A file, photo or voice message this text carries (`body` is then its caption, if any); gone once deleted. */
  attachment?: AttachmentRef;
  /** The disappearing messages timer it was sent under, in seconds (disappearing.ts). */
  expire?: number;
  /** When this account first saw it (for its sender: when it was sent); its expiry counts from then. */
  seenAt?: number;
  /** Its timer ran out: everything it said is gone from this device; the record stays so that no copy of it comes back. */
  expired?: boolean;
  /** Whether it is pinned in its chat, as the last pin or unpin left it. */
  pin?: PinState;
}

/** An edit, deletion, reaction or receipt whose target has not arrived yet (bounded: waiting.ts). */
export interface PendingAction {
  /** The envelope id of the action (or `<id>#<target>` for one target of a receipt). */
  id: string;
  target: string;
  chat: ChatId;
  from: string;
  ts: number;
  /** What the action does to this one target (a receipt names only it). */
  plain: Plain;
  /** This device's clock when it began to wait: it expires from then. */
  at: number;
}

/** Who a message goes to first, when the account's message budget is short. */
export type Priority = 'user' | 'receipt' | 'bulk';

/** A message waiting in the outbox until the service accepts it. */
export interface OutboxItem {
  /** Envelope id it is sent under (replaced when a retry needs a new one: the mid stays). */
  id: string;
  chat: ChatId;
  plain: PlainInput;
  createdAt: number;
  priority: Priority;
  /** `failed`: refused for good until the person retries; `held`: waits for a key to be accepted. */
  state: 'waiting' | 'failed' | 'held';
  attempts: number;
  note?: string;
  /** Its file is still going up: the message waits, and holds its chat, until the upload finished. */
  uploading?: boolean;
}

/** The status one's own message shows: the words are the accessible name. */
export type DeliveryStatus = 'Sending' | 'Not sent' | 'Sent' | 'Delivered' | 'Read';

/**
 * Where one's own message stands. In a room, "Delivered" and "Read" mean every other member
 * (`others`, the membership without oneself) has reported it; in a DM, the peer.
 */
export function deliveryStatus(m: ChatMessage, others: string[]): DeliveryStatus {
  if (m.state === 'failed') return 'Not sent';
  if (m.state === 'queued' || m.state === 'sending') return 'Sending';
  if (others.length === 0) return 'Sent';
  const read = new Set(m.read ?? []);
  if (others.every((n) => read.has(n))) return 'Read';
  const got = new Set([...(m.delivered ?? []), ...read]);
  if (others.every((n) => got.has(n))) return 'Delivered';
  return 'Sent';
}

/** Whether a record counts as a message in unread counts and the chat list (not a log line, not expired). */
export function isShown(m: ChatMessage): boolean {
  return m.kind !== 'event' && !m.expired;
}
