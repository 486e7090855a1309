/**
 * What the views do with a chat's messages and read of them, as the Session offers it
 * (`session.messages`): sending text, files and voice, editing, reacting, retrying, deleting for
 * everyone, pinning; a page of the log, a reply's quote, the status of one's own message; the
 * chat's pins, unread mark and disappearing timer; a message's file. Each goes to the SDK's
 * Conversations, whose changes reach the views as the Session's "change" event.
 */
import type { ChatId, ChatMessage, Conversations, DeliveryStatus, SendFileInput, TimerSetting, Unread, UnreadSince } from '@svc/sdk';
import type { AttachmentBytes } from './attachment-bytes.js';
import type { IdbConversationStore } from './conversation-store.js';

export class MessageActions {
  constructor(
    private readonly conv: Conversations,
    private readonly store: IdbConversationStore,
    private readonly attachments: AttachmentBytes,
  ) {}

  // ---- sending and changing messages ----

  sendText(chat: ChatId, body: string, replyTo?: string): Promise<ChatMessage> {
    return this.conv.sendText(chat, body, replyTo ? { replyTo } : {});
  }

  /** Queues a file (a photo, a voice message) in the outbox; one over the service's limit is refused before anything is sent. */
  sendFile(chat: ChatId, input: SendFileInput): Promise<ChatMessage> {
    return this.conv.sendFile(chat, input);
  }

  edit(message: ChatMessage, body: string): Promise<void> {
    return this.conv.edit(message, body);
  }

  react(message: ChatMessage, emoji: string): Promise<void> {
    return this.conv.react(message, emoji);
  }

  /** "Retry" of one's own message that was not sent. */
  retry(messageId: string): Promise<void> {
    return this.conv.retry(messageId);
  }

  deleteForEveryone(message: ChatMessage): Promise<void> {
    return this.conv.deleteForEveryone(message);
  }

  pin(message: ChatMessage): Promise<void> {
    return this.conv.pin(message);
  }

  unpin(message: ChatMessage): Promise<void> {
    return this.conv.unpin(message);
  }

  canEdit(message: ChatMessage): boolean {
    return this.conv.canEdit(message);
  }

  canDelete(message: ChatMessage): boolean {
    return this.conv.canDelete(message);
  }

  canPin(message: ChatMessage): boolean {
    return this.conv.canPin(message);
  }

  // ---- reading a chat ----

  /** The newest `limit` messages of the chat, or those before `before` (the log's next page up). */
  page(chat: ChatId, options: { limit: number; before?: { ts: number; id: string } }): Promise<ChatMessage[]> {
    return this.store.chat(chat, options);
  }

  /** The message a reply quotes, from this chat only (an id of another chat reads as not loaded). */
  quoted(chat: ChatId, messageId: string): Promise<ChatMessage | undefined> {
    return this.conv.quoted(chat, messageId);
  }

  mentionsMe(message: ChatMessage): boolean {
    return this.conv.mentionsMe(message);
  }

  /** The status one's own message shows ("Sending", "Not sent", "Sent", "Delivered", "Read"). */
  status(message: ChatMessage): DeliveryStatus {
    return this.conv.status(message);
  }

  /** For one's own message waiting in the outbox: milliseconds until it is expected to go, else null. */
  waitMs(messageId: string): number | null {
    return this.conv.waitMs(messageId);
  }

  /** The chat's unread messages: how many, the first one (the "New messages" line), whether one mentions this account. */
  unread(chat: ChatId): Promise<Unread> {
    return this.conv.unread(chat);
  }

  /** The same, with the records after the read marker it was counted from: what the chat opens on, read once. */
  unreadSince(chat: ChatId): Promise<UnreadSince> {
    return this.conv.unreadSince(chat);
  }

  /** The chat's pinned messages ("Pinned messages" under its header). */
  pinned(chat: ChatId): Promise<ChatMessage[]> {
    return this.conv.pinned(chat);
  }

  /** Whom a message in `chat` may mention: a room's members but this account; nobody in a DM. */
  mentionable(chat: ChatId): string[] {
    return chat.startsWith('room:') ? this.conv.members(chat).filter((nick) => nick !== this.conv.me) : [];
  }

  /** The chat's "Disappearing messages" timer. */
  timer(chat: ChatId): Promise<TimerSetting> {
    return this.conv.timer(chat);
  }

  /** Sets the chat's timer for every member (0: off); null when it was that already. */
  setTimer(chat: ChatId, seconds: number): Promise<ChatMessage | null> {
    return this.conv.setTimer(chat, seconds);
  }

  // ---- files ----

  /** An attachment's bytes: kept on this device, or downloaded and checked by the SDK (then kept); `onProgress` as a fraction. */
  fileBytes(message: ChatMessage, onProgress?: (fraction: number) => void): Promise<Uint8Array> {
    return this.attachments.bytes(message, onProgress);
  }

  /** A file as a data: URL (what the CSP lets an image show), downloaded once per attachment. */
  fileUrl(message: ChatMessage): Promise<string> {
    return this.attachments.dataUrl(message);
  }

  /** Calls `fn` as the uploads of one's own files go; returns the function that stops it. */
  onUploadProgress(fn: (messageId: string, done: number, total: number) => void): () => void {
    return this.conv.attachments.onProgress(fn);
  }

  /** The largest file the service takes, in bytes of the file itself. */
  maxFileBytes(): Promise<number> {
    return this.conv.attachments.uploader.maxFileBytes();
  }
}
