/**
 * What the chat list marks on each entry besides its own bookkeeping: the chat's draft
 * ("Draft: …") and whether an unread message mentions this account ("Mentioned"). Both are read
 * from the store once for each chat the list shows, then kept in step as drafts are typed and
 * messages arrive or are read. The Session owns one and shows the list again when a mark changed.
 */
import type { ChatId, Conversations } from '@svc/sdk';
import type { ChatSummary } from './chats.js';

export class ChatMarks {
  /** Chats with an unread message that mentions this account. */
  private readonly mentioned = new Set<string>();
  /** Each chat's draft as the list shows it. */
  private readonly draftLines = new Map<string, string>();
  /** Chats whose draft and unread mention were read from the store. */
  private readonly readFromStore = new Set<string>();

  constructor(private readonly conv: Conversations) {}

  /** Sets the marks on the entries of `list`. */
  mark(list: ChatSummary[]): void {
    for (const entry of list) {
      if (this.mentioned.has(entry.chat)) entry.mentioned = true;
      const draft = this.draftLines.get(entry.chat);
      if (draft) entry.draft = draft;
    }
  }

  /**
   * Reads the draft and unread mention of each chat in `list` not read yet (rooms and contacts
   * come in after the start); true when one was found, so the list is worth showing again.
   */
  async readFirstSeen(list: ChatSummary[]): Promise<boolean> {
    const fresh = list.filter((entry) => !this.readFromStore.has(entry.chat));
    for (const entry of fresh) this.readFromStore.add(entry.chat);
    // All at once: one after another, a long list kept the store busy for a while after the start.
    const found = await Promise.all(
      fresh.map(async (entry) => {
        const chat = entry.chat as ChatId;
        const draft = await this.conv.drafts.preview(chat);
        return { chat, draft, mentioned: entry.unread > 0 && (await this.conv.unread(chat)).mentioned };
      }),
    );
    let changed = false;
    for (const { chat, draft, mentioned } of found) {
      if (draft && !this.draftLines.has(chat)) {
        this.draftLines.set(chat, draft);
        changed = true;
      }
      if (mentioned) {
        this.mentioned.add(chat);
        changed = true;
      }
    }
    return changed;
  }

  /** The chat's draft, as the composer opens with it. */
  draft(chat: ChatId): Promise<string> {
    return this.conv.drafts.get(chat);
  }

  /** Keeps `text` as the chat's draft (sealed in the store; white space alone removes it); true when the list's line changed. */
  async setDraft(chat: ChatId, text: string): Promise<boolean> {
    await this.conv.drafts.set(chat, text);
    const line = await this.conv.drafts.preview(chat);
    if (line === (this.draftLines.get(chat) ?? null)) return false;
    if (line) this.draftLines.set(chat, line);
    else this.draftLines.delete(chat);
    return true;
  }

  /** A message that mentions this account arrived in `chat` while it was not being read. */
  mentionArrived(chat: string): void {
    this.mentioned.add(chat);
  }

  /** `chat` was read: its "Mentioned" goes; true when it had one. */
  chatRead(chat: string): boolean {
    return this.mentioned.delete(chat);
  }
}
