/**
 * "Search messages": an index of the history in memory only, filled from the store the first time
 * a search runs and kept in step with every change of the records after that.
 */
import { SearchIndex, type Change } from '@svc/sdk';
import type { IdbConversationStore } from './conversation-store.js';

export class ChatSearch {
  private readonly index = new SearchIndex();
  private loaded: Promise<void> | null = null;

  constructor(private readonly store: IdbConversationStore) {}

  /** The records changed: new and changed ones are indexed, removed ones leave. */
  follow(change: Change): void {
    for (const id of change.removed ?? []) this.index.remove(id);
    for (const message of [...change.changed, ...(change.added ? [change.added] : []), ...(change.imported ?? [])]) this.index.put(message);
  }

  /** A message disappeared: it is found no more. */
  remove(messageId: string): void {
    this.index.remove(messageId);
  }

  forgetChat(chat: string): void {
    this.index.forgetChat(chat);
  }

  /** The index, once the whole history was read and decrypted into it. */
  ready(): Promise<SearchIndex> {
    this.loaded ??= this.store.all().then((all) => {
      for (const message of all) this.index.put(message);
    });
    return this.loaded.then(() => this.index);
  }
}
