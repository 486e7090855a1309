/** What the message log (messagelog.ts) offers the conversation view. */
import type { ChatMessage } from '@svc/sdk';

/** Where a chat opens (the SDK's UnreadSince, or its summary alone). */
export interface Unread {
  first: string | null;
  count: number;
  since?: ChatMessage[];
}

export interface MessageLog {
  el: HTMLElement;
  /** "Jump to latest", shown while the log is scrolled up from the bottom (placed over the log's foot). */
  jump: HTMLButtonElement;
  /**
   * Reads the newest page; resolves when it is on screen. With `unread` (the first unread record's
   * id), reads back to it, shows "New messages" above it and scrolls there; `since`, the records
   * the count was read from (those after the read marker), are taken as they are.
   */
  open(unread?: Unread): Promise<void>;
  upsert(m: ChatMessage): void;
  /** Many records at once (history from another device or a file): one rebuild for all. */
  upsertMany(ms: ChatMessage[]): void;
  remove(id: string): void;
  /** Many records gone at once (disappearing messages): one rebuild for all. */
  removeMany(ids: Iterable<string>): void;
  get(id: string): ChatMessage | undefined;
  /** The drawn row of a record, if it is drawn. */
  row(id: string): HTMLElement | undefined;
  /** What is on screen, oldest first. */
  records(): ChatMessage[];
  /** Re-renders the rows of these ids (a countdown ticked, a member list changed). */
  refresh(ids: Iterable<string>): void;
  /** Scrolls to a message and marks it for a moment; reads older pages until it is found. */
  reveal(id: string): Promise<boolean>;
  /** Stops listening (the chat was closed). */
  destroy(): void;
}
