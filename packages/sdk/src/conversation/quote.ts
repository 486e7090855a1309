/**
 * The message a reply quotes. A reply names its target by envelope id alone, and a sender may name
 * any id it knows, so the quote is taken only from the reply's own chat: a record of another chat
 * reads as not found, as a missing one does, and never shows its text where it does not belong.
 */
import type { ChatId } from '../envelopes.js';
import type { ChatMessage } from './model.js';
import type { ConversationStore } from './store.js';

/** The record `id` when it belongs to `chat`; undefined when it is missing or of another chat. */
export async function quotedRecord(store: Pick<ConversationStore, 'get'>, chat: ChatId, id: string): Promise<ChatMessage | undefined> {
  const q = await store.get(id);
  return q?.chat === chat ? q : undefined;
}
