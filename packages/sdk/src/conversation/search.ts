/**
 * Search over the decrypted history on this device. The index holds, for each record that has
 * text, its text folded for matching; nothing of it leaves the app's memory in the clear
 * (search-store.ts keeps it sealed in the store between sessions). Matching is case- and
 * accent-insensitive; every word of the query must occur in the text, or for a file, photo or
 * voice message in its name or caption.
 */
import type { ChatId } from '../envelopes.js';
import type { ChatMessage } from './model.js';

export interface SearchHit {
  id: string;
  chat: ChatId;
  from: string;
  ts: number;
  body: string;
  /** The file name of an attachment message (its caption is `body`). */
  file?: string;
}

interface Entry extends SearchHit {
  /** The text folded for matching. */
  folded: string;
  /** A number its owner keeps with the entry (SearchStore: the stored part it is in). */
  part: number;
}

/** Any UTF-16 code unit beyond ASCII (a surrogate too). */
const NON_ASCII = /[\u0080-\uffff]/;

/** Lower case, no accents (NFD without combining marks), so "Cafe" finds "café". */
export function fold(text: string): string {
  // Plain ASCII has no marks to drop: the common case skips the normalization.
  if (!NON_ASCII.test(text)) return text.toLowerCase();
  return text.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();
}

/** What the index keeps of a record: null for one that has nothing to find (deleted, not a text, empty). */
export function searchEntry(m: ChatMessage): SearchHit | null {
  const file = m.attachment?.name;
  if (m.kind !== 'text' || m.deleted || (!m.body && !file)) return null;
  return { id: m.id, chat: m.chat, from: m.from, ts: m.ts, body: m.body ?? '', ...(file ? { file } : {}) };
}

/** Whether two entries find and show the same. */
export function sameEntry(a: SearchHit, b: SearchHit): boolean {
  return a.id === b.id && a.chat === b.chat && a.from === b.from && a.ts === b.ts && a.body === b.body && a.file === b.file;
}

/** Newest first: time, then id. */
const newer = (a: SearchHit, b: SearchHit): boolean => a.ts > b.ts || (a.ts === b.ts && a.id > b.id);

export class SearchIndex {
  /**
   * Each chat's entries, so a chat is forgotten (or written out) without a pass over the rest. An
   * id is looked for in each chat (a few hundred lookups) rather than kept in a map of its own: a
   * stored index of 100,000 entries is read back with one map insertion each.
   */
  private readonly chats = new Map<string, Map<string, Entry>>();
  private count = 0;

  /** Adds or replaces what a record says; a deleted or non-text record leaves the index. */
  put(m: ChatMessage): void {
    const hit = searchEntry(m);
    if (hit) this.set(hit);
    else this.remove(m.id);
  }

  /** Adds or replaces an entry as searchEntry() made it, with `part` kept beside it. */
  set(hit: SearchHit, part = 0): void {
    const was = this.chatOfId(hit.id);
    if (was !== undefined && was !== hit.chat) this.remove(hit.id);
    this.setFields(hit.id, hit.chat, hit.from, hit.ts, hit.body, hit.file, part);
  }

  /** set() from the fields, for an id no other chat holds (a stored index read back: no object made on the way). */
  setFields(id: string, chatId: ChatId, from: string, ts: number, body: string, file: string | undefined, part = 0): void {
    let chat = this.chats.get(chatId);
    if (!chat) {
      chat = new Map<string, Entry>();
      this.chats.set(chatId, chat);
    }
    const folded = fold(file !== undefined ? `${file}\n${body}` : body);
    const entry: Entry =
      file !== undefined ? { id, chat: chatId, from, ts, body, file, folded, part } : { id, chat: chatId, from, ts, body, folded, part };
    const before = chat.size;
    chat.set(id, entry);
    this.count += chat.size - before;
  }

  /** The entry of record `id` (in `chat`, when known), if it has one. */
  get(id: string, chat?: string): SearchHit | undefined {
    return this.find(id, chat);
  }

  /** The chat that record `id` belongs to, if it has an entry. */
  chatOfId(id: string): string | undefined {
    return this.find(id)?.chat;
  }

  /** The part kept with record `id`'s entry, if it has one. */
  partOf(id: string, chat?: string): number | undefined {
    return this.find(id, chat)?.part;
  }

  /** Whether `chat` holds an entry for record `id`. */
  holds(chat: string, id: string): boolean {
    return this.chats.get(chat)?.has(id) ?? false;
  }

  /** How many entries `chat` has. */
  chatSize(chat: string): number {
    return this.chats.get(chat)?.size ?? 0;
  }

  /** Each entry of `chat`, with its part. */
  *chatEntries(chat: string): IterableIterator<[SearchHit, number]> {
    for (const e of this.chats.get(chat)?.values() ?? []) yield [e, e.part];
  }

  remove(id: string, chat?: string): void {
    const e = this.find(id, chat);
    if (!e) return;
    const entries = this.chats.get(e.chat)!;
    entries.delete(id);
    this.count--;
    if (entries.size === 0) this.chats.delete(e.chat);
  }

  /** Forgets a chat (left, removed, deleted). */
  forgetChat(chat: string): void {
    this.count -= this.chatSize(chat);
    this.chats.delete(chat);
  }

  get size(): number {
    return this.count;
  }

  private find(id: string, chat?: string): Entry | undefined {
    if (chat !== undefined) return this.chats.get(chat)?.get(id);
    for (const entries of this.chats.values()) {
      const e = entries.get(id);
      if (e) return e;
    }
    return undefined;
  }

  /** The newest `limit` records whose text holds every word of `query`, newest first. */
  search(query: string, limit = 50): SearchHit[] {
    const words = fold(query).split(/\s+/).filter(Boolean);
    if (words.length === 0 || limit <= 0) return [];
    // The newest `limit` hits so far, newest first: a large history with a common word never sorts all of its hits.
    const top: Entry[] = [];
    for (const entries of this.chats.values())
      for (const e of entries.values()) {
        if (top.length === limit && !newer(e, top[limit - 1]!)) continue;
        if (!words.every((w) => e.folded.includes(w))) continue;
        let i = top.length;
        while (i > 0 && newer(e, top[i - 1]!)) i--;
        top.splice(i, 0, e);
        if (top.length > limit) top.pop();
      }
    return top.map(({ folded: _f, part: _p, ...hit }) => hit);
  }
}
