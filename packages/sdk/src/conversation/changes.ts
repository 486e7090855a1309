/**
 * What the conversation layer tells its listeners and hands its helpers, as types of their own:
 * Conversations (conversations.ts) makes them, and the history transfer and the app read them,
 * without either importing the other.
 */
import type { DecryptedMessage } from '../envelopes.js';
import type { ChatMessage } from './model.js';
import type { HistoryPlain } from '../wire/plaintext.js';

/** What changed in the records a person sees, as one notification. */
export interface Change {
  /** A record that is new in its chat (counted as unread when `from` is another and it is shown). */
  added?: ChatMessage;
  /** Records whose content or status changed. */
  changed: ChatMessage[];
  /** Ids of records that went away (a retried message under a new id). */
  removed?: string[];
  /** Records that came with history from another device or a file: shown, never counted as unread. */
  imported?: ChatMessage[];
}

/** A decrypted envelope that carries the history transfer (transfer.ts handles it). */
export type HistoryMessage = Extract<DecryptedMessage, { ok: true }> & { plain: HistoryPlain };
