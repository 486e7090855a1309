/**
 * A ConversationStore over another one that passes every call through: a wrapper that keeps
 * something in step with the records (SearchStore) overrides only the writes it follows.
 */
import type { ChatId } from '../envelopes.js';
import type { ChatMessage, OutboxItem, PendingAction } from './model.js';
import type { ChatRange, ConversationStore } from './store.js';

export class StoreOver implements ConversationStore {
  constructor(readonly inner: ConversationStore) {}

  put(m: ChatMessage): Promise<void> {
    return this.inner.put(m);
  }
  remove(id: string): Promise<void> {
    return this.inner.remove(id);
  }
  forgetChat(chat: ChatId): Promise<void> {
    return this.inner.forgetChat(chat);
  }
  get(id: string): Promise<ChatMessage | undefined> {
    return this.inner.get(id);
  }
  idForMid(from: string, mid: string): Promise<string | undefined> {
    return this.inner.idForMid(from, mid);
  }
  chat(chat: ChatId, o?: ChatRange): Promise<ChatMessage[]> {
    return this.inner.chat(chat, o);
  }
  all(): Promise<ChatMessage[]> {
    return this.inner.all();
  }
  addPending(p: PendingAction): Promise<void> {
    return this.inner.addPending(p);
  }
  takePending(target: string): Promise<PendingAction[]> {
    return this.inner.takePending(target);
  }
  countPending(o?: { from: string; chat?: ChatId }): Promise<number> {
    return this.inner.countPending(o);
  }
  purgePending(before: number): Promise<{ removed: number; oldest?: number }> {
    return this.inner.purgePending(before);
  }
  outboxList(): Promise<OutboxItem[]> {
    return this.inner.outboxList();
  }
  outboxPut(item: OutboxItem): Promise<void> {
    return this.inner.outboxPut(item);
  }
  outboxRemove(id: string): Promise<void> {
    return this.inner.outboxRemove(id);
  }
  getMeta(key: string): Promise<unknown> {
    return this.inner.getMeta(key);
  }
  putMeta(key: string, value: unknown): Promise<void> {
    return this.inner.putMeta(key, value);
  }
  removeMeta(key: string): Promise<void> {
    return this.inner.removeMeta(key);
  }
}
