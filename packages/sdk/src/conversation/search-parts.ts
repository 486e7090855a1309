/**
 * The search index as SearchStore (search-store.ts) keeps it in the store: the manifest and each
 * chat's parts, checked when read back (anything else is built again from the records), and what
 * is known of each chat's parts while the app runs.
 */
import type { LatestWrite } from './latest-write.js';
import type { ChatMessage } from './model.js';

/** The layout of the stored index: any other is built again from the records. */
export const SEARCH_FORMAT = 1;
export const K_SEARCH_MANIFEST = 'search.manifest';
/** The name of a chat's part `n`. */
export const searchPartKey = (chat: string, n: number): string => `search|${chat}|${n}`;
/** Entries per part: a busy chat rewrites only its newest part, so parts stay small enough to write often. */
export const SEARCH_PART_SIZE = 2_000;

export type StoredEntry = [id: string, from: string, ts: number, body: string, file?: string];
export interface StoredPart {
  v: number;
  chat: string;
  n: number;
  entries: StoredEntry[];
}
/** `chats`: [chat, parts, dirty]; every part key of a chat is below its `parts`. */
export interface StoredManifest {
  v: number;
  complete: boolean;
  chats: [chat: string, parts: number, dirty: 0 | 1][];
}

/** A record change as the index sees it. */
export type Op = { put: ChatMessage } | { remove: string } | { forget: string };
/** What a change did to a chat's entries: nothing, a change, or a removal (written at settle()). */
export type Effect = 'none' | 'change' | 'removal';

/** What is known of one chat's entries and their parts in the store. */
export class ChatState {
  /** Every part key of the chat in the store is below this (a part beyond it is counted in the manifest before it is written). */
  parts = 0;
  /** The manifest says, or is about to say, that the parts may not match the records. */
  dirty = false;
  /** Resolves once a manifest that says `dirty` is durable; null until one is asked for. */
  marked: Promise<void> | null = null;
  /** The parts are not to be read (a mark left by a session that stopped, or a part that did not open): made again from the records. */
  stale = false;
  /** The chat's entries are in the index. */
  loaded = false;
  loading: Promise<void> | null = null;
  /** How many entries each part holds (an entry's part is kept with it in the index). */
  sizes: number[] = [];
  /** Parts whose content changed since they were written. */
  readonly changed = new Set<number>();
  /** Changes begun (a write marks the chat clean only when none began meanwhile), and those not finished. */
  gen = 0;
  inflight = 0;
  /** Changes that came while the entries were being read or made again, applied over them. */
  pending: Op[] = [];
  /** The writes of its parts, one at a time (made by SearchStore on the first). */
  writes: LatestWrite | null = null;

  constructor(readonly chat: string) {}
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function parseManifest(v: unknown): { chats: [string, number, boolean][] } | { keys: string[] } {
  const chats: [string, number, boolean][] = [];
  const list = isRecord(v) && Array.isArray(v.chats) ? (v.chats as unknown[]) : [];
  for (const c of list)
    if (Array.isArray(c) && typeof c[0] === 'string' && Number.isSafeInteger(c[1]) && (c[1] as number) >= 0)
      chats.push([c[0], c[1] as number, c[2] === 1]);
  if (isRecord(v) && v.v === SEARCH_FORMAT && v.complete === true && chats.length === list.length) return { chats };
  // Not built, or by another format: the parts it names go when this one is built.
  return { keys: chats.flatMap(([chat, parts]) => Array.from({ length: Math.min(parts, 100_000) }, (_, n) => searchPartKey(chat, n))) };
}

/** The entries of a stored part, checked; null when it is not part `n` of `chat` in this format. */
export function parsePart(v: unknown, chat: string, n: number): StoredEntry[] | null {
  if (!isRecord(v) || v.v !== SEARCH_FORMAT || v.chat !== chat || v.n !== n || !Array.isArray(v.entries)) return null;
  for (const e of v.entries as unknown[])
    if (
      !Array.isArray(e) ||
      typeof e[0] !== 'string' ||
      typeof e[1] !== 'string' ||
      typeof e[2] !== 'number' ||
      typeof e[3] !== 'string' ||
      (e[4] !== undefined && typeof e[4] !== 'string')
    )
      return null;
  return v.entries as StoredEntry[];
}

/** Reads a chat's `count` parts; throws if one is missing or does not parse as its part. */
export async function readChatParts(read: (key: string) => Promise<unknown>, chat: string, count: number): Promise<StoredEntry[][]> {
  const values = await Promise.all(Array.from({ length: count }, (_, n) => read(searchPartKey(chat, n))));
  return values.map((value, n) => {
    const part = parsePart(value, chat, n);
    if (!part) throw new Error(`search index: part ${n} of a chat does not read`);
    return part;
  });
}

/** The chats a stored manifest lists, as [chat, parts, dirty]. */
export function statesOf(chats: [string, number, boolean][]): ChatState[] {
  return chats.map(([chat, parts, dirty]) => {
    const c = new ChatState(chat);
    c.parts = parts;
    // Left dirty by a session that stopped: its parts may hold what the records no longer do.
    if (dirty) {
      c.dirty = c.stale = true;
      c.marked = Promise.resolve();
    }
    return c;
  });
}

/** The manifest of `chats`: each chat that is dirty or has parts. */
export function manifestOf(complete: boolean, chats: Iterable<ChatState>): StoredManifest {
  return {
    v: SEARCH_FORMAT,
    complete,
    chats: [...chats].filter((c) => c.dirty || c.parts > 0).map((c) => [c.chat, c.parts, c.dirty ? 1 : 0]),
  };
}

/** How long after a change its part is written, unless told otherwise. */
export const SEARCH_DELAY_MS = 2_000;

export interface SearchStoreOptions {
  /** How long after a change its part is written (ms); removals go at settle(). */
  delayMs?: number;
  /** Entries per part. */
  partSize?: number;
  /** Told what failed in the background (a write that is retried later). */
  onError?: (e: unknown) => void;
}
