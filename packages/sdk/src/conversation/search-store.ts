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
import type { ChatMessage } from './model.js';
import { SearchIndex, searchEntry, type SearchHit } from './search.js';
import { addEntry, addParts, affects, apply, chatOf, partValues } from './search-entries.js';
import {
  ChatState,
  K_SEARCH_MANIFEST,
  manifestOf,
  parseManifest,
  readChatParts,
  SEARCH_DELAY_MS,
  SEARCH_PART_SIZE,
  searchPartKey,
  statesOf,
  type Effect,
  type Op,
  type SearchStoreOptions,
  type StoredEntry,
} from './search-parts.js';
import { LatestWrite } from './latest-write.js';
import type { ConversationStore } from './store.js';
import { StoreOver } from './store-over.js';

export class SearchStore extends StoreOver {
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
  /** The manifest as it is when each write begins. */
  private readonly manifest = new LatestWrite(() => this.inner.putMeta(K_SEARCH_MANIFEST, manifestOf(this.complete, this.chats.values())));

  constructor(inner: ConversationStore, o: SearchStoreOptions = {}) {
    super(inner);
    this.delayMs = o.delayMs ?? SEARCH_DELAY_MS;
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

  /**
   * Reads the stored index a chat at a time, each after `pause()` (the app waits for an idle
   * moment; it rejects to stop), so that the first search finds it in memory; a search meanwhile
   * reads the rest at once. No index stored: nothing is read (the first search builds it).
   */
  async warm(pause: () => Promise<void>): Promise<void> {
    await this.open();
    for (const c of this.complete ? [...this.chats.values()] : [])
      while (!c.loaded && !this.closed) {
        await pause();
        await this.load(c, true);
      }
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

  override put(m: ChatMessage): Promise<void> {
    return this.change(m.chat, { put: m }, () => this.inner.put(m));
  }

  override async remove(id: string): Promise<void> {
    await this.open();
    let chat = this.idx.chatOfId(id);
    if (chat === undefined && this.complete) chat = (await this.inner.get(id))?.chat;
    return this.change(chat, { remove: id }, () => this.inner.remove(id));
  }

  /** Drops a chat's records, then its parts: neither stays once this resolves. */
  override async forgetChat(chat: ChatId): Promise<void> {
    await this.change(chat, { forget: chat }, () => this.inner.forgetChat(chat));
    const c = this.chats.get(chat);
    if (c && this.complete) await this.write(c);
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
      if (!c.loaded || affects(this.idx, c, op)) {
        await this.mark(c);
        marked = true;
      }
      await write();
      const effect = apply(this.idx, c, op, this.partSize);
      // Only when another change of the same record came in between.
      if (effect !== 'none' && !marked) await this.mark(c);
      this.noted(c, effect);
    } finally {
      c.inflight--;
    }
  }

  /** A change written while the index was built, applied once the build is done. */
  private async late(op: Op): Promise<void> {
    const chat = chatOf(this.idx, op);
    if (chat === undefined) return;
    const c = this.state(chat);
    c.gen++;
    await this.mark(c);
    this.noted(c, apply(this.idx, c, op, this.partSize));
  }

  private noted(c: ChatState, effect: Effect): void {
    if (effect === 'none') return;
    this.toWrite.add(c);
    if (effect === 'removal') this.urgent.add(c);
    this.schedule();
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
    for (const c of statesOf(m.chats)) {
      if (c.dirty) this.toWrite.add(c);
      this.chats.set(c.chat, c);
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
    let parts: StoredEntry[][];
    try {
      parts = await readChatParts((key) => this.inner.getMeta(key), c.chat, c.parts);
    } catch (e) {
      // Missing, unopened or malformed: the chat's entries are made again from its records.
      this.onError(e);
      c.stale = true;
      this.toWrite.add(c);
      this.schedule();
      return;
    }
    if (c.loaded) return;
    addParts(this.idx, c, parts);
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
      if (hit) addEntry(this.idx, c, hit, this.partSize);
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
    for (const op of pending) this.noted(c, apply(this.idx, c, op, this.partSize));
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
      if (hit) addEntry(this.idx, this.state(m.chat), hit, this.partSize);
    }
    this.complete = true;
    for (const op of ops) {
      const chat = chatOf(this.idx, op);
      if (chat !== undefined) apply(this.idx, this.state(chat), op, this.partSize);
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
    return this.manifest.run();
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
    c.writes ??= new LatestWrite(() => this.writeNow(c));
    return c.writes.run();
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
        const values = partValues(this.idx, c, changed);
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
}
