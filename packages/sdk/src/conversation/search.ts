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
  /** Each chat's entries, so a chat is forgotten (or written out) without a pass over the rest. */
  private readonly chats = new Map<string, Map<string, Entry>>();
  private readonly chatOf = new Map<string, string>();

  /** Adds or replaces what a record says; a deleted or non-text record leaves the index. */
  put(m: ChatMessage): void {
    const hit = searchEntry(m);
    if (hit) this.set(hit);
    else this.remove(m.id);
  }

  /** Adds or replaces an entry as searchEntry() made it, with `part` kept beside it. */
  set(hit: SearchHit, part = 0): void {
    const was = this.chatOf.get(hit.id);
    if (was !== undefined && was !== hit.chat) this.remove(hit.id);
    let chat = this.chats.get(hit.chat);
    if (!chat) {
      chat = new Map<string, Entry>();
      this.chats.set(hit.chat, chat);
    }
    const entry: Entry = { id: hit.id, chat: hit.chat, from: hit.from, ts: hit.ts, body: hit.body, folded: '', part };
    if (hit.file !== undefined) entry.file = hit.file;
    entry.folded = fold(hit.file !== undefined ? `${hit.file}\n${hit.body}` : hit.body);
    chat.set(hit.id, entry);
    this.chatOf.set(hit.id, hit.chat);
  }

  /** The entry of record `id`, if it has one. */
  get(id: string): SearchHit | undefined {
    const chat = this.chatOf.get(id);
    return chat === undefined ? undefined : this.chats.get(chat)?.get(id);
  }

  /** The chat that record `id` belongs to, if it has an entry. */
  chatOfId(id: string): string | undefined {
    return this.chatOf.get(id);
  }

  /** The part kept with record `id`'s entry, if it has one. */
  partOf(id: string): number | undefined {
    const chat = this.chatOf.get(id);
    return chat === undefined ? undefined : this.chats.get(chat)?.get(id)?.part;
  }

  /** How many entries `chat` has. */
  chatSize(chat: string): number {
    return this.chats.get(chat)?.size ?? 0;
  }

  /** Each entry of `chat`, with its part. */
  *chatEntries(chat: string): IterableIterator<[SearchHit, number]> {
    for (const e of this.chats.get(chat)?.values() ?? []) yield [e, e.part];
  }

  remove(id: string): void {
    const chat = this.chatOf.get(id);
    if (chat === undefined) return;
    this.chatOf.delete(id);
    const entries = this.chats.get(chat);
    entries?.delete(id);
    if (entries?.size === 0) this.chats.delete(chat);
  }

  /** Forgets a chat (left, removed, deleted). */
  forgetChat(chat: string): void {
    for (const id of this.chats.get(chat)?.keys() ?? []) this.chatOf.delete(id);
    this.chats.delete(chat);
  }

  get size(): number {
    return this.chatOf.size;
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
