/**
 * Drafts: the text typed in a chat's composer and not sent, kept per chat among the store's named
 * values (`draft:<chat>`), so a store that seals records at rest seals them too. Sending a text
 * clears its chat's draft (Conversations.sendText).
 */
import type { ChatId } from '../envelopes.js';
import type { ConversationStore } from './store.js';

export const draftKey = (chat: ChatId): string => `draft:${chat}`;

/** A draft is kept up to this many characters (far above what one message holds). */
export const MAX_DRAFT_CHARS = 100_000;

export class Drafts {
  constructor(private readonly store: ConversationStore) {}

  /** The chat's draft, '' when none. */
  async get(chat: ChatId): Promise<string> {
    const v = await this.store.getMeta(draftKey(chat));
    return typeof v === 'string' ? v : '';
  }

  /** Keeps `text` as the chat's draft; a text of only white space removes it. */
  async set(chat: ChatId, text: string): Promise<void> {
    if (text.trim() === '') return this.clear(chat);
    await this.store.putMeta(draftKey(chat), text.slice(0, MAX_DRAFT_CHARS));
  }

  async clear(chat: ChatId): Promise<void> {
    await this.store.removeMeta(draftKey(chat));
  }

  /** What the chat list shows in place of the last message ("Draft: <text>", first line), or null. */
  async preview(chat: ChatId): Promise<string | null> {
    const d = await this.get(chat);
    return d ? `Draft: ${d.split('\n')[0]}` : null;
  }
}
