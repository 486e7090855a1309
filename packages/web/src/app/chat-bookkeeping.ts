/**
 * The chat list's bookkeeping of a change in the records: the chat of a new message moves up and
 * counts it unread unless it is being read, its last-message line follows edits and deletions,
 * history from another device or a file moves a chat without counting anything unread, and a chat
 * read on another device takes the SDK's count. A hidden page notifies of a message a person wrote.
 */
import { isShown, type Change, type ChatMessage, type Conversations, type Messenger } from '@svc/sdk';
import type { ChatMarks } from './chat-marks.js';
import { previewOf, type ChatList } from './chats.js';
import type { ChatMutes } from './mutes.js';
import { notifyHidden } from './notify.js';

export class ChatBookkeeping {
  constructor(
    private readonly conv: Conversations,
    private readonly chats: ChatList,
    private readonly marks: ChatMarks,
    private readonly mutes: ChatMutes,
    private readonly messenger: Messenger,
    /** Whether `chat` is on screen while the page is visible. */
    private readonly isReading: (chat: string) => boolean,
  ) {}

  /** Books `change` in the chat list; true when the list is worth showing again. */
  async book(change: Change): Promise<boolean> {
    const { conv, chats, marks, mutes, messenger, isReading } = this;
    const nick = messenger.nick;
    let touched = false;
    const added = change.added;
    if (added && isShown(added)) {
      const incoming = added.from !== nick;
      // A muted chat raises nothing, unless the message mentions this account.
      if (incoming && (await conv.shouldNotify(added))) notifyHidden(nick, (roomId) => messenger.room(roomId)?.name, added);
      if (incoming && !isReading(added.chat) && conv.mentionsMe(added)) marks.mentionArrived(added.chat);
      if (incoming && conv.mentionsMe(added)) mutes.mentionArrived(added.chat);
      await chats.touch(added.chat, added.ts, incoming && !isReading(added.chat), previewOf(added, nick));
      touched = true;
    }
    for (const message of change.changed) {
      if (!isShown(message)) continue;
      if (message.from === nick && message.state === 'sent') await chats.touch(message.chat, message.ts, false, previewOf(message, nick));
      else await chats.setPreview(message.chat, message.ts, previewOf(message, nick));
      touched = true;
    }
    // History from another device or a file: the chat moves to its newest message, and nothing
    // of it is unread (it was read, or not, on the device it came from).
    const newest = new Map<string, ChatMessage>();
    for (const message of change.imported ?? []) {
      const newestSoFar = newest.get(message.chat);
      if (isShown(message) && (!newestSoFar || message.ts > newestSoFar.ts)) newest.set(message.chat, message);
    }
    for (const message of newest.values()) await chats.touch(message.chat, message.ts, false, previewOf(message, nick));
    // Read on another of the account's devices, or deleted: the count follows the SDK's unread.
    const recount = new Set(change.changed.filter((m) => m.from !== nick && (chats.meta(m.chat)?.unread ?? 0) > 0).map((m) => m.chat));
    for (const chat of recount) if (await chats.setUnread(chat, (await conv.unread(chat)).count)) touched = true;
    return touched || newest.size > 0;
  }
}
