/**
 * Search over the decrypted history on this device: the app keeps an index in memory only (built
 * from the sealed store when first asked, then kept in step with changes), so nothing of it is
 * ever written out in the clear. Matching is case- and accent-insensitive; every word of the
 * query must occur in the text, or for a file, photo or voice message in its name or caption.
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
}

/** Lower case, no accents (NFD without combining marks), so "Cafe" finds "café". */
export function fold(text: string): string {
  return text.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();
}

export class SearchIndex {
  private readonly entries = new Map<string, Entry>();

  /** Adds or replaces what a record says; a deleted or non-text record leaves the index. */
  put(m: ChatMessage): void {
    const file = m.attachment?.name;
    if (m.kind !== 'text' || m.deleted || (!m.body && !file)) {
      this.entries.delete(m.id);
      return;
    }
    const body = m.body ?? '';
    const folded = fold(file ? `${file}\n${body}` : body);
    this.entries.set(m.id, { id: m.id, chat: m.chat, from: m.from, ts: m.ts, body, ...(file ? { file } : {}), folded });
  }

  remove(id: string): void {
    this.entries.delete(id);
  }

  /** Forgets a chat (left, removed, deleted). */
  forgetChat(chat: string): void {
    for (const [id, e] of this.entries) if (e.chat === chat) this.entries.delete(id);
  }

  get size(): number {
    return this.entries.size;
  }

  /** The newest `limit` records whose text holds every word of `query`, newest first. */
  search(query: string, limit = 50): SearchHit[] {
    const words = fold(query).split(/\s+/).filter(Boolean);
    if (words.length === 0) return [];
    const hits: Entry[] = [];
    for (const e of this.entries.values()) if (words.every((w) => e.folded.includes(w))) hits.push(e);
    hits.sort((a, b) => b.ts - a.ts || (a.id < b.id ? 1 : -1));
    return hits.slice(0, limit).map(({ folded: _f, ...hit }) => hit);
  }
}
