/**
 * The search index kept in the store between sessions, so that the first search of a session
 * opens a few large values instead of every record. SearchStore is a ConversationStore over
 * another one: every record written through it keeps the index in step, and the index lives in the
 * store's named values (getMeta/putMeta), which a store that seals records at rest seals too.
 *
 * Stored: a manifest (`search.manifest`: the format, whether the index was built, and for each
 * chat how many parts it has and whether they may be stale), and each chat's entries in parts of up
 * to SEARCH_PART_SIZE (`search|<chat>|<n>`).
 *
 * The rule that keeps a stop at any moment from bringing back text the records no longer hold: a
 * chat is marked dirty in the manifest, and the mark is durable, before any record change that
 * alters its entries is written, and before any of its parts is rewritten; the mark goes only after
 * its parts were written with no change begun meanwhile. A chat found dirty at the next start is
 * not read from its parts but made again from its records, as is a chat whose part is missing,
 * does not open or does not parse; a manifest that does not read, or of another format, has the
 * whole index built again. Changes are written within `delayMs`; removals (a message deleted or
 * expired, a record gone) as soon as settle() is awaited, which Conversations does before it
 * reports them, and a forgotten chat's parts before forgetChat() resolves.
 */
import type { ChatId } from '../envelopes.js';
import type { ChatMessage, OutboxItem, PendingAction } from './model.js';
import { SearchIndex, sameEntry, searchEntry, type SearchHit } from './search.js';
import type { ChatRange, ConversationStore } from './store.js';

/** The layout of the stored index: any other is built again from the records. */
export const SEARCH_FORMAT = 1;
export const K_SEARCH_MANIFEST = 'search.manifest';
/** The name of a chat's part `n`. */
export const searchPartKey = (chat: string, n: number): string => `search|${chat}|${n}`;
/** Entries per part: a busy chat rewrites only its newest part, so parts stay small enough to write often. */
export const SEARCH_PART_SIZE = 2_000;
const DELAY_MS = 2_000;

type StoredEntry = [id: string, from: string, ts: number, body: string, file?: string];
interface StoredPart {
  v: number;
  chat: string;
  n: number;
  entries: StoredEntry[];
}
/** `chats`: [chat, parts, dirty]; every part key of a chat is below its `parts`. */
interface StoredManifest {
  v: number;
  complete: boolean;
  chats: [chat: string, parts: number, dirty: 0 | 1][];
}

type Op = { put: ChatMessage } | { remove: string } | { forget: string };
type Effect = 'none' | 'change' | 'removal';

class ChatState {
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
  /** The write waiting behind the one running, shared by whoever asks meanwhile. */
  next: Promise<void> | null = null;
  running: Promise<void> = Promise.resolve();

  constructor(readonly chat: string) {}
}

export interface SearchStoreOptions {
  /** How long after a change its part is written (ms); removals go at settle(). */
  delayMs?: number;
  /** Entries per part. */
  partSize?: number;
  /** Told what failed in the background (a write that is retried later). */
  onError?: (e: unknown) => void;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function parseManifest(v: unknown): { chats: [string, number, boolean][] } | { keys: string[] } {
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
function parsePart(v: unknown, chat: string, n: number): StoredEntry[] | null {
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

export class SearchStore implements ConversationStore {
  private readonly idx = new SearchIndex();
  private readonly chats = new Map<string, ChatState>();
  private readonly delayMs: number;
  private readonly partSize: number;
  private readonly onError: (e: unknown) => void;
  /** The manifest says the index was built (in this format). */
  private complete = false;
  private opening: Promise<void> | null = null;
  private loadingAll: Promise<void> | null = null;
  /** While the index is built from every record: the changes written meanwhile, applied over it. */
  private building: Op[] | null = null;
  /** Part keys of an index of another format, removed when this one is built. */
  private leftovers: string[] = [];
  private readonly toWrite = new Set<ChatState>();
  private readonly urgent = new Set<ChatState>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private closed = false;
  private manifestRunning: Promise<void> = Promise.resolve();
  private manifestNext: Promise<void> | null = null;

  constructor(
    readonly inner: ConversationStore,
    o: SearchStoreOptions = {},
  ) {
    this.delayMs = o.delayMs ?? DELAY_MS;
    this.partSize = o.partSize ?? SEARCH_PART_SIZE;
    this.onError = o.onError ?? (() => undefined);
  }

  // ---- the index ----

  /** The index of every chat: read from the store, or built once from the records (then written out). */
  index(): Promise<SearchIndex> {
    this.loadingAll ??= this.loadAll().catch((e: unknown) => {
      this.loadingAll = null;
      throw e;
    });
    return this.loadingAll.then(() => this.idx);
  }

  /** The newest `limit` records whose text holds every word of `query` (SearchIndex.search). */
  async search(query: string, limit = 50): Promise<SearchHit[]> {
    return (await this.index()).search(query, limit);
  }

  /** Writes every change of the index now (the app locks or closes). */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const failed = (await Promise.allSettled([...this.toWrite, ...this.urgent].map((c) => this.write(c)))).find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /**
   * Writes the parts that lost entries (a message deleted or expired, a record gone), so that no
   * removed text stays in the store; Conversations awaits it before it reports a removal. A failed
   * write goes to onError and is tried again later: until it succeeds the chat's dirty mark keeps
   * its parts from being read at the next start.
   */
  async settle(): Promise<void> {
    if (this.urgent.size === 0) return;
    const chats = [...this.urgent];
    for (const r of await Promise.allSettled(chats.map((c) => this.write(c)))) if (r.status === 'rejected') this.onError(r.reason);
  }

  /** Writes what is pending and stops the timer; later changes are still marked, and written by flush() or settle(). */
  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
  }

  // ---- ConversationStore: record writes keep the index in step ----

  put(m: ChatMessage): Promise<void> {
    return this.change(m.chat, { put: m }, () => this.inner.put(m));
  }

  async remove(id: string): Promise<void> {
    await this.open();
    let chat = this.idx.chatOfId(id);
    if (chat === undefined && this.complete) chat = (await this.inner.get(id))?.chat;
    return this.change(chat, { remove: id }, () => this.inner.remove(id));
  }

  /** Drops a chat's records, then its parts: neither stays once this resolves. */
  async forgetChat(chat: ChatId): Promise<void> {
    await this.change(chat, { forget: chat }, () => this.inner.forgetChat(chat));
    const c = this.chats.get(chat);
    if (c && this.complete) await this.write(c);
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

  // ---- changes ----

  /** A record change of `chat`: marked before it is written when it alters the chat's entries, then applied to them. */
  private async change(chat: string | undefined, op: Op, write: () => Promise<void>): Promise<void> {
    await this.open();
    if (!this.complete) {
      // No index is stored, so none can be stale; one being built takes the change in.
      await write();
      if (this.building) this.building.push(op);
      else if (this.complete) await this.late(op);
      return;
    }
    if (chat === undefined) return write();
    const c = this.state(chat);
    c.gen++;
    c.inflight++;
    try {
      if (!c.loaded && !c.stale && !('forget' in op)) await this.load(c, false);
      let marked = false;
      if (!c.loaded || this.affects(c, op)) {
        await this.mark(c);
        marked = true;
      }
      await write();
      const effect = this.apply(c, op);
      // Only when another change of the same record came in between.
      if (effect !== 'none' && !marked) await this.mark(c);
      this.noted(c, effect);
    } finally {
      c.inflight--;
    }
  }

  /** A change written while the index was built, applied once the build is done. */
  private async late(op: Op): Promise<void> {
    const chat = 'put' in op ? op.put.chat : 'forget' in op ? op.forget : this.idx.chatOfId(op.remove);
    if (chat === undefined) return;
    const c = this.state(chat);
    c.gen++;
    await this.mark(c);
    this.noted(c, this.apply(c, op));
  }

  private noted(c: ChatState, effect: Effect): void {
    if (effect === 'none') return;
    this.toWrite.add(c);
    if (effect === 'removal') this.urgent.add(c);
    this.schedule();
  }

  /** Whether `op` alters the entries of a loaded chat. */
  private affects(c: ChatState, op: Op): boolean {
    if ('forget' in op) return c.parts > 0 || this.idx.chatSize(c.chat) > 0;
    if ('remove' in op) return this.holds(c, op.remove);
    const hit = searchEntry(op.put);
    const old = this.idx.get(op.put.id, c.chat);
    return hit ? !old || !sameEntry(old, hit) : old !== undefined;
  }

  private apply(c: ChatState, op: Op): Effect {
    if ('forget' in op) {
      if (!c.loaded && c.loading) {
        c.pending.push(op);
        return 'removal';
      }
      this.idx.forgetChat(c.chat);
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
      if (!this.holds(c, op.remove)) return 'none';
      this.drop(c, op.remove);
      return 'removal';
    }
    const hit = searchEntry(op.put);
    const has = this.holds(c, op.put.id);
    if (!hit) {
      if (!has) return 'none';
      this.drop(c, op.put.id);
      return 'removal';
    }
    if (has) {
      const old = this.idx.get(hit.id, c.chat);
      if (old && sameEntry(old, hit)) return 'none';
      const n = this.idx.partOf(hit.id, c.chat)!;
      this.idx.setFields(hit.id, hit.chat, hit.from, hit.ts, hit.body, hit.file, n);
      c.changed.add(n);
      return 'change';
    }
    this.add(c, hit);
    return 'change';
  }

  private add(c: ChatState, hit: SearchHit): void {
    if (c.sizes.length === 0 || c.sizes.at(-1)! >= this.partSize) c.sizes.push(0);
    const n = c.sizes.length - 1;
    c.sizes[n]!++;
    c.changed.add(n);
    // A record never changes chat, so no other chat holds its id.
    this.idx.setFields(hit.id, hit.chat, hit.from, hit.ts, hit.body, hit.file, n);
  }

  /** Whether record `id` has an entry in this chat. */
  private holds(c: ChatState, id: string): boolean {
    return this.idx.holds(c.chat, id);
  }

  private drop(c: ChatState, id: string): void {
    const n = this.idx.partOf(id, c.chat)!;
    c.sizes[n]!--;
    c.changed.add(n);
    this.idx.remove(id, c.chat);
  }

  // ---- reading ----

  private open(): Promise<void> {
    this.opening ??= this.readManifest().catch((e: unknown) => {
      this.opening = null;
      throw e;
    });
    return this.opening;
  }

  private async readManifest(): Promise<void> {
    let value: unknown;
    try {
      value = await this.inner.getMeta(K_SEARCH_MANIFEST);
    } catch (e) {
      // Unread, the manifest may yet say clean: it goes, so that nothing unmarked is ever trusted.
      this.onError(e);
      await this.inner.removeMeta(K_SEARCH_MANIFEST);
      return;
    }
    const m = parseManifest(value);
    if ('keys' in m) {
      this.leftovers = m.keys;
      return;
    }
    this.complete = true;
    for (const [chat, parts, dirty] of m.chats) {
      const c = new ChatState(chat);
      c.parts = parts;
      if (dirty) {
        // Left dirty by a session that stopped: its parts may hold what the records no longer do.
        c.dirty = c.stale = true;
        c.marked = Promise.resolve();
        this.toWrite.add(c);
      }
      this.chats.set(chat, c);
    }
    if (this.toWrite.size > 0) this.schedule();
  }

  /** The chat's state; a chat the manifest does not list has no parts, so nothing to read. */
  private state(chat: string): ChatState {
    let c = this.chats.get(chat);
    if (!c) {
      c = new ChatState(chat);
      c.loaded = true;
      this.chats.set(chat, c);
    }
    return c;
  }

  /** Reads the chat's parts, or (`rebuild`) makes a stale chat's entries again from its records. */
  private load(c: ChatState, rebuild: boolean): Promise<void> {
    if (c.loaded || (c.stale && !rebuild && !c.loading)) return Promise.resolve();
    c.loading ??= (c.stale ? this.rebuild(c) : this.readParts(c)).finally(() => {
      c.loading = null;
    });
    return c.loading;
  }

  private async readParts(c: ChatState): Promise<void> {
    const parts: StoredEntry[][] = [];
    try {
      const values = await Promise.all(Array.from({ length: c.parts }, (_, n) => this.inner.getMeta(searchPartKey(c.chat, n))));
      for (let n = 0; n < values.length; n++) {
        const part = parsePart(values[n], c.chat, n);
        if (!part) throw new Error(`search index: part ${n} of a chat does not read`);
        parts.push(part);
      }
    } catch (e) {
      // Missing, unopened or malformed: the chat's entries are made again from its records.
      this.onError(e);
      c.stale = true;
      this.toWrite.add(c);
      this.schedule();
      return;
    }
    if (c.loaded) return;
    c.sizes = parts.map((part) => part.length);
    const chat = c.chat as ChatId;
    parts.forEach((part, n) => {
      for (const e of part) this.idx.setFields(e[0], chat, e[1], e[2], e[3], e[4], n);
    });
    this.loaded(c);
  }

  /** Makes the chat's entries from its records, as a build does. */
  private async rebuild(c: ChatState): Promise<void> {
    // What was written before is in what is read; what is written from now on may not be, and is applied over it.
    c.pending = [];
    const records = await this.inner.chat(c.chat as ChatId);
    if (c.loaded) return;
    this.idx.forgetChat(c.chat);
    c.sizes = [];
    for (const m of records) {
      const hit = searchEntry(m);
      if (hit) this.add(c, hit);
    }
    c.stale = false;
    this.loaded(c);
    this.toWrite.add(c);
    this.schedule();
  }

  private loaded(c: ChatState): void {
    const pending = c.pending;
    c.pending = [];
    c.loaded = true;
    for (const op of pending) this.noted(c, this.apply(c, op));
  }

  private async loadAll(): Promise<void> {
    await this.open();
    if (!this.complete) return this.build();
    await Promise.all(
      [...this.chats.values()].map(async (c) => {
        while (!c.loaded) await this.load(c, true);
      }),
    );
  }

  /** Builds the index from every record (no index stored, or one of another format) and writes it out. */
  private async build(): Promise<void> {
    const ops: Op[] = [];
    this.building = ops;
    let all: ChatMessage[];
    try {
      all = await this.inner.all();
      // An index of another format goes before this one's parts can take the same names.
      for (const key of this.leftovers) await this.inner.removeMeta(key);
      this.leftovers = [];
    } finally {
      this.building = null;
    }
    for (const m of all) {
      const hit = searchEntry(m);
      if (hit) this.add(this.state(m.chat), hit);
    }
    this.complete = true;
    for (const op of ops) {
      const chat = 'put' in op ? op.put.chat : 'forget' in op ? op.forget : this.idx.chatOfId(op.remove);
      if (chat !== undefined) this.apply(this.state(chat), op);
    }
    // Every chat is listed dirty until its parts are written, so a stop before that rebuilds it.
    for (const c of this.chats.values()) c.dirty = true;
    const saved = this.saveManifest();
    for (const c of this.chats.values()) {
      const marked = saved.catch((e: unknown) => {
        if (c.marked === marked) c.marked = null;
        throw e;
      });
      marked.catch(() => undefined);
      c.marked = marked;
      this.toWrite.add(c);
    }
    this.schedule();
  }

  // ---- writing ----

  /** Marks the chat dirty; resolves once the manifest that says so is durable. */
  private mark(c: ChatState): Promise<void> {
    if (c.dirty && c.marked) return c.marked;
    c.dirty = true;
    const marked: Promise<void> = this.saveManifest().catch((e: unknown) => {
      if (c.marked === marked) c.marked = null;
      throw e;
    });
    marked.catch(() => undefined);
    c.marked = marked;
    return marked;
  }

  /** Writes the manifest as it is when the write begins; callers meanwhile share the next write. */
  private saveManifest(): Promise<void> {
    if (this.manifestNext) return this.manifestNext;
    const next = this.manifestRunning.then(() => {
      this.manifestNext = null;
      const value: StoredManifest = {
        v: SEARCH_FORMAT,
        complete: this.complete,
        chats: [...this.chats.values()].filter((c) => c.dirty || c.parts > 0).map((c) => [c.chat, c.parts, c.dirty ? 1 : 0]),
      };
      return this.inner.putMeta(K_SEARCH_MANIFEST, value);
    });
    this.manifestNext = next;
    this.manifestRunning = next.catch(() => undefined);
    return next;
  }

  private schedule(): void {
    if (this.timer || this.closed) return;
    const timer = setTimeout(() => {
      this.timer = null;
      void this.flush().catch((e: unknown) => this.onError(e));
    }, this.delayMs);
    // A Node program may end without close(): what was not written is made again from the records
    // at its next start (the chats are marked dirty), so the timer need not keep it running.
    (timer as { unref?: () => void }).unref?.();
    this.timer = timer;
  }

  /** Writes the chat's changed parts (one write at a time per chat; whoever asks meanwhile shares the next). */
  private write(c: ChatState): Promise<void> {
    if (c.next) return c.next;
    const next = c.running.then(() => {
      c.next = null;
      return this.writeNow(c);
    });
    c.next = next;
    c.running = next.catch(() => undefined);
    return next;
  }

  private async writeNow(c: ChatState): Promise<void> {
    this.toWrite.delete(c);
    this.urgent.delete(c);
    try {
      while (!c.loaded) await this.load(c, true);
      if (!c.dirty && c.changed.size === 0) return;
      const gen = c.gen;
      const quiet = c.inflight === 0;
      // Parts are rewritten only under a durable mark, so a stop halfway leaves them unread.
      await this.mark(c);
      while (c.sizes.length > 0 && c.sizes.at(-1) === 0) c.sizes.pop();
      const count = c.sizes.length;
      if (count > c.parts) {
        c.parts = count;
        await this.saveManifest();
      }
      const changed = [...c.changed].filter((n) => n < count);
      c.changed.clear();
      try {
        const values = this.partValues(c, changed);
        await Promise.all(changed.map((n, i) => this.inner.putMeta(searchPartKey(c.chat, n), values[i])));
        for (let n = count; n < c.parts; n++) await this.inner.removeMeta(searchPartKey(c.chat, n));
      } catch (e) {
        for (const n of changed) c.changed.add(n);
        throw e;
      }
      if (c.gen !== gen || !quiet) {
        this.toWrite.add(c);
        this.schedule();
        return;
      }
      c.parts = count;
      c.dirty = false;
      c.marked = null;
      await this.saveManifest();
    } catch (e) {
      this.toWrite.add(c);
      this.schedule();
      throw e;
    }
  }

  /** Parts `ns` of the chat as stored, in one pass over its entries. */
  private partValues(c: ChatState, ns: number[]): StoredPart[] {
    const parts = ns.map((n): StoredPart => ({ v: SEARCH_FORMAT, chat: c.chat, n, entries: [] }));
    const at = new Map(ns.map((n, i) => [n, parts[i]!.entries]));
    for (const [e, n] of this.idx.chatEntries(c.chat))
      at.get(n)?.push(e.file !== undefined ? [e.id, e.from, e.ts, e.body, e.file] : [e.id, e.from, e.ts, e.body]);
    return parts;
  }
}
