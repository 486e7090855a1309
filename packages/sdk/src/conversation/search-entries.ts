/**
 * How a record change alters a chat's entries in the index and which of its parts it touches
 * (SearchStore, search-store.ts), and the parts as they are read back and written out.
 */
import { SearchIndex, sameEntry, searchEntry, type SearchHit } from './search.js';
import type { ChatId } from '../envelopes.js';
import { SEARCH_FORMAT, type ChatState, type Effect, type Op, type StoredEntry, type StoredPart } from './search-parts.js';

/** Whether `op` alters the entries of a loaded chat. */
export function affects(idx: SearchIndex, c: ChatState, op: Op): boolean {
  if ('forget' in op) return c.parts > 0 || idx.chatSize(c.chat) > 0;
  if ('remove' in op) return idx.holds(c.chat, op.remove);
  const hit = searchEntry(op.put);
  const old = idx.get(op.put.id, c.chat);
  return hit ? !old || !sameEntry(old, hit) : old !== undefined;
}

export function apply(idx: SearchIndex, c: ChatState, op: Op, partSize: number): Effect {
  if ('forget' in op) {
    if (!c.loaded && c.loading) {
      c.pending.push(op);
      return 'removal';
    }
    idx.forgetChat(c.chat);
    c.sizes = [];
    c.changed.clear();
    c.pending = [];
    c.loaded = true;
    c.stale = false;
    return 'removal';
  }
  if (!c.loaded) {
    c.pending.push(op);
    return 'remove' in op || op.put.deleted ? 'removal' : 'change';
  }
  if ('remove' in op) {
    if (!idx.holds(c.chat, op.remove)) return 'none';
    dropEntry(idx, c, op.remove);
    return 'removal';
  }
  const hit = searchEntry(op.put);
  const has = idx.holds(c.chat, op.put.id);
  if (!hit) {
    if (!has) return 'none';
    dropEntry(idx, c, op.put.id);
    return 'removal';
  }
  if (has) {
    const old = idx.get(hit.id, c.chat);
    if (old && sameEntry(old, hit)) return 'none';
    const n = idx.partOf(hit.id, c.chat)!;
    idx.setFields(hit.id, hit.chat, hit.from, hit.ts, hit.body, hit.file, n);
    c.changed.add(n);
    return 'change';
  }
  addEntry(idx, c, hit, partSize);
  return 'change';
}

export function addEntry(idx: SearchIndex, c: ChatState, hit: SearchHit, partSize: number): void {
  if (c.sizes.length === 0 || c.sizes.at(-1)! >= partSize) c.sizes.push(0);
  const n = c.sizes.length - 1;
  c.sizes[n]!++;
  c.changed.add(n);
  // A record never changes chat, so no other chat holds its id.
  idx.setFields(hit.id, hit.chat, hit.from, hit.ts, hit.body, hit.file, n);
}

/** Puts a chat's stored parts in the index, each entry with the part it came from. */
export function addParts(idx: SearchIndex, c: ChatState, parts: StoredEntry[][]): void {
  c.sizes = parts.map((part) => part.length);
  const chat = c.chat as ChatId;
  parts.forEach((part, n) => {
    for (const e of part) idx.setFields(e[0], chat, e[1], e[2], e[3], e[4], n);
  });
}

function dropEntry(idx: SearchIndex, c: ChatState, id: string): void {
  const n = idx.partOf(id, c.chat)!;
  c.sizes[n]!--;
  c.changed.add(n);
  idx.remove(id, c.chat);
}

/** Parts `ns` of the chat as stored, in one pass over its entries. */
export function partValues(idx: SearchIndex, c: ChatState, ns: number[]): StoredPart[] {
  const parts = ns.map((n): StoredPart => ({ v: SEARCH_FORMAT, chat: c.chat, n, entries: [] }));
  const at = new Map(ns.map((n, i) => [n, parts[i]!.entries]));
  for (const [e, n] of idx.chatEntries(c.chat))
    at.get(n)?.push(e.file !== undefined ? [e.id, e.from, e.ts, e.body, e.file] : [e.id, e.from, e.ts, e.body]);
  return parts;
}

/** The chat a change is of (a removal's, from the entry it removes); undefined when no entry says. */
export function chatOf(idx: SearchIndex, op: Op): string | undefined {
  return 'put' in op ? op.put.chat : 'forget' in op ? op.forget : idx.chatOfId(op.remove);
}
