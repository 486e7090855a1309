/**
 * The SDK's MemoryStore kept in the state file: reads come from memory; every change is applied
 * in memory and written through before it resolves, as the ConversationStore contract asks (an
 * envelope is acknowledged only once it is on disk). When another svc process wrote the file
 * meanwhile, its content is taken and this process's changes are applied to it again, so neither
 * loses the other's messages, pins or outbox.
 */
import { MemoryStore, type ChatId, type ChatMessage, type ChatRange, type ConversationStore, type OutboxItem, type PendingAction } from '@svc/sdk';
import type { StateFile } from './state-file.js';

type Change = (s: MemoryStore) => Promise<unknown>;

export class FileStore implements ConversationStore {
  private mem: MemoryStore;
  /** Changes made since the last write, in order. */
  private waiting: Change[] = [];
  private writing: Promise<void> = Promise.resolve();

  constructor(private readonly file: StateFile) {
    this.mem = MemoryStore.from(file.content.store);
  }

  /** Applies `c` here and resolves once it is in the file (changes made at the same time share one write). */
  private async change<T>(c: (s: MemoryStore) => Promise<T>): Promise<T> {
    const result = await c(this.mem);
    this.waiting.push(c);
    await this.flush();
    return result;
  }

  /** Writes what waits; resolves once everything changed before the call is in the file. */
  flush(): Promise<void> {
    const next = this.writing.then(async () => {
      if (this.waiting.length === 0) return;
      const changes = this.waiting;
      this.waiting = [];
      await this.file.update(async (content, reloaded) => {
        if (reloaded) {
          const base = MemoryStore.from(content.store);
          for (const c of changes) await c(base);
          // Changes made while the file was read are applied on top, and written by the next flush.
          for (const c of this.waiting) await c(base);
          this.mem = base;
        }
        content.store = this.mem.snapshot();
      });
    });
    this.writing = next.catch(() => undefined);
    return next;
  }

  get(id: string): Promise<ChatMessage | undefined> {
    return this.mem.get(id);
  }
  idForMid(from: string, mid: string): Promise<string | undefined> {
    return this.mem.idForMid(from, mid);
  }
  chat(chat: ChatId, o?: ChatRange): Promise<ChatMessage[]> {
    return this.mem.chat(chat, o);
  }
  all(): Promise<ChatMessage[]> {
    return this.mem.all();
  }
  countPending(o?: { from: string; chat?: ChatId }): Promise<number> {
    return this.mem.countPending(o);
  }
  outboxList(): Promise<OutboxItem[]> {
    return this.mem.outboxList();
  }
  getMeta(key: string): Promise<unknown> {
    return this.mem.getMeta(key);
  }

  put(m: ChatMessage): Promise<void> {
    const copy = structuredClone(m);
    return this.change((s) => s.put(copy));
  }
  remove(id: string): Promise<void> {
    return this.change((s) => s.remove(id));
  }
  forgetChat(chat: ChatId): Promise<void> {
    return this.change((s) => s.forgetChat(chat));
  }
  addPending(p: PendingAction): Promise<void> {
    const copy = structuredClone(p);
    return this.change((s) => s.addPending(copy));
  }
  takePending(target: string): Promise<PendingAction[]> {
    return this.change((s) => s.takePending(target));
  }
  purgePending(before: number): Promise<{ removed: number; oldest?: number }> {
    return this.change((s) => s.purgePending(before));
  }
  outboxPut(item: OutboxItem): Promise<void> {
    const copy = structuredClone(item);
    return this.change((s) => s.outboxPut(copy));
  }
  outboxRemove(id: string): Promise<void> {
    return this.change((s) => s.outboxRemove(id));
  }
  putMeta(key: string, value: unknown): Promise<void> {
    const copy = structuredClone(value);
    return this.change((s) => s.putMeta(key, copy));
  }
  removeMeta(key: string): Promise<void> {
    return this.change((s) => s.removeMeta(key));
  }
}
