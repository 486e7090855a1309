/**
 * "Search messages": the SDK's SearchStore over the app's sealed store. Every record the
 * conversation layer writes goes through it, so the index stays in step by itself; it is kept
 * sealed in the store between sessions (parts per chat, docs/WEB.md), so the first search of a
 * session opens a few large values instead of decrypting the whole history.
 */
import { SearchStore, type ChatId, type SearchIndex } from '@svc/sdk';
import type { IdbConversationStore } from './conversation-store.js';

export class ChatSearch {
  /** The store the conversation layer writes through. */
  readonly store: SearchStore;

  /** `closed`: the session's end, which takes the page listener with it. */
  constructor(
    records: IdbConversationStore,
    private readonly closed: AbortSignal,
  ) {
    this.store = new SearchStore(records, { onError: (e) => console.warn('search index:', e) });
    // A closed tab writes what it can, so the next start rarely has a chat to build again.
    if (typeof addEventListener === 'function')
      addEventListener('pagehide', () => void this.flush().catch((e: unknown) => console.warn('search index:', e)), { signal: closed });
  }

  /** The index, read from its stored parts (or built from the records once). */
  ready(): Promise<SearchIndex> {
    return this.store.index();
  }

  /**
   * Reads the stored index in the background, a chat per idle moment of the page, so that the
   * first search finds it in memory instead of opening every part while the person waits; a search
   * typed meanwhile reads the rest at once. Stops when the session closes.
   */
  warm(): void {
    const idle = () =>
      new Promise<void>((resolve, reject) => {
        if (this.closed.aborted) return reject(new Error('closed'));
        if (typeof requestIdleCallback === 'function') requestIdleCallback(() => resolve(), { timeout: 1_000 });
        else setTimeout(resolve, 0);
      });
    void this.store.warm(idle).catch((e: unknown) => {
      if (!this.closed.aborted) console.warn('search index:', e);
    });
  }

  /** Drops a chat's records and its part of the index, both before it resolves. */
  forgetChat(chat: ChatId): Promise<void> {
    return this.store.forgetChat(chat);
  }

  /** Writes what changed since the last write (before the app locks, or when the page goes). */
  flush(): Promise<void> {
    return this.store.flush();
  }

  close(): Promise<void> {
    return this.store.close();
  }
}
