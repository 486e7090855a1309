/**
 * What a person keeps per chat besides its messages: the mute (their own setting, synced to the
 * account's other devices), where they stopped reading (unread count, the "New messages"
 * separator, "Mentioned"), and the rule that says whether a message raises a notification.
 *
 * Mute: `mute:<chat>` among the store's named values, `{until, sentAt, mid}`; a change goes to the
 * account's other devices as a `mute` message in its private room ("Devices"), the room the
 * history transfer and the membership records use, whose only member is the account. The change
 * with the greatest (sentAt, mid) holds on every device; a change made on a device is stamped later
 * than the one it holds, so a change made after seeing another's wins whatever the devices' clocks.
 * A device added later never got those messages: when it asks for history (a `history-request` in
 * that room), each device sends again the mutes that still hold, as they were (same sentAt and
 * mid), which the devices that have them take as nothing new.
 *
 * Read marker: `read:<chat>`, the (ts, id) of the newest record the person had on screen when the
 * chat was marked read. It is not a message of its own: a chat marked read on one device sends read
 * receipts, which reach the account's other devices too (a DM's copies, a room's members), and each
 * device that gets its own account's read receipt takes it as read there and moves its marker. So
 * the marker follows the person at no cost in messages, and it only ever moves forward.
 */
import { SdkError } from '../errors.js';
import type { ChatId } from '../envelopes.js';
import { mentionsMe } from './mentions.js';
import { isLater, stampAfter, withMeta } from './meta-lock.js';
import { byTime } from './store.js';
import { isShown, type ChatMessage } from './model.js';
import type { MutePlain } from '../wire/plaintext.js';
import type { ConversationStore } from './store.js';
import type { TransferLink } from './transfer-types.js';

export const muteKey = (chat: ChatId): string => `mute:${chat}`;
/** The chats that have a mute setting, so a new device can be told them all. */
const MUTED_CHATS = 'mute.chats';
export const readKey = (chat: ChatId): string => `read:${chat}`;

/** A chat's mute: until when (ms), or always; `until` 0 means not muted. */
export interface MuteSetting {
  until: number | 'always';
  sentAt: number;
  mid: string;
}

/** The menu's choices: the menuitem's name and how long it mutes. */
export const MUTE_CHOICES = [
  { label: 'Mute for 1 hour', ms: 60 * 60_000 },
  { label: 'Mute for 8 hours', ms: 8 * 60 * 60_000 },
  { label: 'Mute always', ms: 'always' },
] as const;

/** Whether a mute holds at `now`. */
export function isMuted(mute: Pick<MuteSetting, 'until'> | null | undefined, now: number): boolean {
  return !!mute && (mute.until === 'always' || mute.until > now);
}

/** What shouldNotify needs to know about the chat. */
export interface ChatNotifyState {
  mute: Pick<MuteSetting, 'until'> | null;
}

/**
 * Whether `message` raises a notification (and counts in the title): a message of another person
 * that is shown (not a log line, not deleted or expired); in a muted chat, only when it mentions
 * `self`.
 */
export function shouldNotify(message: ChatMessage, chatState: ChatNotifyState, self: string, now = Date.now()): boolean {
  if (message.from === self || !isShown(message) || message.deleted) return false;
  return !isMuted(chatState.mute, now) || mentionsMe(message, self);
}

export type MessageSender = Pick<TransferLink, 'carrier' | 'isCarrier' | 'enqueue' | 'me' | 'now'>;

/** The person's mutes, on this device and (through the private room) on the account's other ones. */
export class ChatMutes {
  constructor(
    private readonly store: ConversationStore,
    private readonly link: () => MessageSender,
    private readonly newMid: () => string,
  ) {}

  /** The chat's mute as last changed; null when never muted. Whether it holds now: isMuted(). */
  async get(chat: ChatId): Promise<MuteSetting | null> {
    return ((await this.store.getMeta(muteKey(chat))) as MuteSetting | undefined) ?? null;
  }

  /**
   * Mutes `chat` until `until` (ms; a time past unmutes) or always, or unmutes it (0): here at once,
   * then on the account's other devices. SdkError `invalid` for any other value.
   */
  async set(chat: ChatId, until: number | 'always'): Promise<MuteSetting> {
    if (until !== 'always' && !(Number.isSafeInteger(until) && until >= 0))
      throw new SdkError('invalid', { message: 'A mute lasts until a time, or always.' });
    if (!/^(dm|room):/.test(chat)) throw new SdkError('invalid', { message: 'Not a chat.' });
    const l = this.link();
    // Later than the setting this device holds, which may have come from a device whose clock runs ahead.
    const setting = await withMeta(this.store, async () => {
      const cur = await this.get(chat);
      const s: MuteSetting = { until, sentAt: stampAfter(l.now(), cur?.sentAt), mid: this.newMid() };
      await this.store.putMeta(muteKey(chat), s);
      await this.remember(chat);
      return s;
    });
    const plain: Omit<MutePlain, 'v'> = { type: 'mute', chat, until, sentAt: setting.sentAt, mid: setting.mid };
    await l.enqueue(await l.carrier(), plain);
    return setting;
  }

  /** A `mute` message arrived: taken only from the account itself, in its private room. */
  async handle(d: { from: string; chat: ChatId; plain: MutePlain }): Promise<boolean> {
    const l = this.link();
    if (d.from !== l.me || !l.isCarrier(d.chat)) return false;
    return this.apply(d.plain.chat as ChatId, { until: d.plain.until, sentAt: d.plain.sentAt, mid: d.plain.mid ?? '' });
  }

  private apply(chat: ChatId, s: MuteSetting): Promise<boolean> {
    return withMeta(this.store, async () => {
      const cur = await this.get(chat);
      if (cur && !isLater(s, cur)) return false;
      await this.store.putMeta(muteKey(chat), s);
      await this.remember(chat);
      return true;
    });
  }

  /** Adds `chat` to the list of chats with a setting (inside withMeta). */
  private async remember(chat: ChatId): Promise<void> {
    const chats = ((await this.store.getMeta(MUTED_CHATS)) as ChatId[] | undefined) ?? [];
    if (!chats.includes(chat)) await this.store.putMeta(MUTED_CHATS, [...chats, chat]);
  }

  /**
   * Sends again, to the account's other devices, every mute that still holds, as it was: for a
   * device that joined after it was set. Returns how many went.
   */
  async announce(): Promise<number> {
    const l = this.link();
    const now = l.now();
    let sent = 0;
    for (const chat of ((await this.store.getMeta(MUTED_CHATS)) as ChatId[] | undefined) ?? []) {
      const s = await this.get(chat);
      if (!s || !isMuted(s, now)) continue;
      const plain: Omit<MutePlain, 'v'> = { type: 'mute', chat, until: s.until, sentAt: s.sentAt, mid: s.mid };
      await l.enqueue(await l.carrier(), plain);
      sent++;
    }
    return sent;
  }
}

/** Where the person stopped reading a chat. */
export interface ReadMarker {
  ts: number;
  id: string;
}

export async function readMarker(store: ConversationStore, chat: ChatId): Promise<ReadMarker | null> {
  return ((await store.getMeta(readKey(chat))) as ReadMarker | undefined) ?? null;
}

/** Moves the chat's marker to `upTo` when that is later; never back. */
export function moveReadMarker(store: ConversationStore, chat: ChatId, upTo: ReadMarker): Promise<boolean> {
  return withMeta(store, async () => {
    const cur = await readMarker(store, chat);
    if (cur && byTime(upTo, cur) <= 0) return false;
    await store.putMeta(readKey(chat), { ts: upTo.ts, id: upTo.id });
    return true;
  });
}

export interface Unread {
  /** Messages of others after the marker that are not read (the chat list's count). */
  count: number;
  /** The oldest of them: the "New messages" separator goes above it. */
  first: string | null;
  /** One of them mentions the person: the chat list shows "Mentioned". */
  mentioned: boolean;
}

/** Whether `m` waits to be read by `me`. */
export function isUnread(m: ChatMessage, me: string): boolean {
  return isShown(m) && m.from !== me && !m.deleted && m.reported !== 'read';
}

/** Unread, and the records after the read marker it was counted from: what a chat opens on. */
export interface UnreadSince extends Unread {
  /** The chat's records after the marker (every record of a chat never read), in time order. */
  since: ChatMessage[];
}

/**
 * The chat's unread messages: the records after the marker (all of them in a chat never read),
 * read at once, so the cost follows what is unread. Pages read back from the newest would cost
 * more: a store reads whole weeks, and each page reads the week it stops in again.
 */
export async function unreadSince(store: ConversationStore, chat: ChatId, me: string): Promise<UnreadSince> {
  const marker = await readMarker(store, chat);
  const since = await store.chat(chat, marker ? { after: marker } : {});
  const out: UnreadSince = { count: 0, first: null, mentioned: false, since };
  for (const m of since) {
    if (!isUnread(m, me)) continue;
    out.count++;
    out.first ??= m.id;
    if (!out.mentioned && mentionsMe(m, me)) out.mentioned = true;
  }
  return out;
}

/** The chat's unread messages (unreadSince without the records). */
export async function unreadOf(store: ConversationStore, chat: ChatId, me: string): Promise<Unread> {
  const { count, first, mentioned } = await unreadSince(store, chat, me);
  return { count, first, mentioned };
}
