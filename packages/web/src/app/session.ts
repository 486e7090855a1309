/**
 * A signed-in account on this device: the SDK Messenger and its conversation layer (Conversations
 * over the sealed IndexedDB store), plus what this browser keeps for the views (pins, chat list)
 * and the event stream. Views hold one Session and listen to it.
 */
import {
  Conversations,
  SearchIndex,
  attachTransfer,
  isAttachmentPlain,
  isShown,
  isMuted,
  isTransferRoom,
  splitChatId,
  type Change,
  type ChatId,
  type ChatMessage,
  type ConnectionState,
  type HistoryTransfer,
  type KeptFilesSource,
  type Messenger,
  type MuteSetting,
  type TransferEvent,
} from '@svc/sdk';
import { ChatList, type ChatSummary } from './chats.js';
import { Emitter } from './emitter.js';
import { Db } from './idb.js';
import { Membership } from './membership.js';
import { closeNotifications, notifyHidden } from './notify.js';
import { KeptFiles, uploadFiles } from './keptfiles.js';
import { keptSource } from './keptsource.js';
import { IdbConversationStore } from './store.js';
import { Tags } from './tags.js';
import { Trust } from './trust.js';

/** The longest a browser timer waits (setTimeout overflows past 2^31 ms); a later deadline is looked at again then. */
const MAX_TIMER_MS = 24 * 60 * 60_000;

export type EndReason = 'signed_out' | 'session_ended' | 'device_removed' | 'account_deleted';

export interface SessionEvents extends Record<string, unknown> {
  chats: ChatSummary[];
  /** Records of the conversation store that are new, changed or gone. */
  change: Change;
  conn: ConnectionState;
  trust: undefined;
  rooms: undefined;
  /** A chat went away (room deleted, left, or removed from it). */
  gone: string;
  /** A chat's mute changed, here or on another of the account's devices (the chat id). */
  mute: string;
  /** A room's membership record or its standing against the service's list changed (the room id). */
  membership: string;
  ended: EndReason;
  /** Something failed in the background that the user should know about. */
  problem: string;
  /** The history transfer: a new device asks, and how far a transfer is (components/transfer.ts). */
  transfer: TransferEvent;
}

/** The line a chat list shows for its last message. */
export function previewOf(m: ChatMessage, me: string): string {
  const who = m.from === me ? 'You' : m.from;
  if (m.deleted) return `${who}: Message deleted`;
  if (m.kind === 'text' && m.attachment && !m.body)
    return `${who}: ${m.attachment.type === 'photo' ? 'Photo' : m.attachment.type === 'voice' ? 'Voice message' : m.attachment.name}`;
  if (m.kind === 'text') return `${who}: ${(m.body ?? '').replace(/\s+/g, ' ').slice(0, 80)}`;
  return `${who}: ${m.kind === 'unknown' ? 'Message for a newer version of the app' : 'Message that could not be decrypted'}`;
}

export class Session extends Emitter<SessionEvents> {
  readonly nick: string;
  readonly store: IdbConversationStore;
  readonly conv: Conversations;
  readonly trust: Trust;
  readonly chats: ChatList;
  readonly membership: Membership;
  /** The search index, in memory only; filled from the store the first time a search runs. */
  readonly search = new SearchIndex();
  private searchLoaded: Promise<void> | null = null;
  private readonly urls = new Map<string, Promise<string>>();
  /** Received files, sealed in this device's store (at most a byte budget of them). */
  readonly files: KeptFiles;
  /** Files sent from this device until their upload finished, sealed in its store. */
  readonly uploads: ReturnType<typeof uploadFiles>;
  /** The kept files as a history export, import or transfer reads and writes them. */
  readonly kept: KeptFilesSource;
  conn: ConnectionState = 'connecting';
  /** The chat on screen, so arriving messages there do not count as unread. */
  openChat: string | null = null;
  /** The history between this account's devices (docs/CRYPTO.md). */
  readonly transfer: HistoryTransfer;
  /** Set by a sign-in on a device without history: it asks the other devices once it is connected. */
  askHistory = false;
  /** Chats with an unread message that mentions this account ("Mentioned" in the chat list). */
  private readonly mentioned = new Set<string>();
  /** Each chat's draft as the chat list shows it ("Draft: …"). */
  private readonly draftLines = new Map<string, string>();
  /** Chats whose draft and unread mention were read from the store. */
  private readonly marksRead = new Set<string>();
  private transferLoaded = false;
  /** Each chat's mute as last read from the store, and the muted chats with an unread mention of this account. */
  private readonly mutes = new Map<string, MuteSetting | null>();
  private readonly mentionedMuted = new Set<string>();
  private muteTimer: ReturnType<typeof setTimeout> | null = null;
  /** The one timer of the next disappearing message, and when it fires (ms, the service's clock). */
  private expiryTimer: ReturnType<typeof setTimeout> | null = null;
  private expiryAt: number | null = null;
  private closed = false;

  constructor(
    readonly m: Messenger,
    readonly db: Db,
    readonly deviceId: string,
  ) {
    super();
    this.nick = m.nick;
    const tags = new Tags(m.indexKey);
    this.store = new IdbConversationStore(db, m.historyKey, tags);
    this.files = new KeptFiles(db, m.historyKey, tags);
    this.uploads = uploadFiles(db, m.historyKey, tags);
    // A message deleted, or its chat forgotten: its kept file goes too.
    this.store.filesGone = async (ids) => {
      for (const id of ids) {
        this.urls.delete(id);
        await this.files.remove(id);
      }
    };
    this.kept = keptSource(this.files);
    this.conv = new Conversations({
      messenger: m,
      store: this.store,
      // Files wait here for their upload, so a reload or a cut network resumes it.
      files: this.uploads,
      onError: (e) => console.warn('membership record or attachment:', e),
    });
    this.conv.membership.on((roomId) => {
      this.emit('membership', roomId);
      // A room's log tells of members joining and leaving as its record changes.
      void this.membership.update().catch((e: unknown) => console.warn('membership lines:', e));
    });
    this.trust = new Trust(db, m.historyKey, tags, { nick: m.nick, publicKey: m.publicKey });
    this.trust.onChange = () => {
      this.emit('trust', undefined);
      this.publishChats();
    };
    this.chats = new ChatList(m, db, tags);
    this.membership = new Membership(this);
    // The history goes as an archive in the attachment store, with the files kept here.
    this.transfer = attachTransfer(m, this.conv, deviceId, { kept: this.kept });
    this.transfer.on((e) => this.emit('transfer', e));
    this.conv.on((c) => {
      for (const id of c.removed ?? []) this.search.remove(id);
      for (const m of [...c.changed, ...(c.added ? [c.added] : []), ...(c.imported ?? [])]) this.search.put(m);
      this.emit('change', c);
      void this.book(c).catch((e: unknown) => console.warn('chat list:', e));
      // A message with a timer was sent or seen: its deadline may be the next one.
      if ([...c.changed, ...(c.added ? [c.added] : []), ...(c.imported ?? [])].some((m) => m.expire && m.seenAt !== undefined && !m.expired))
        void this.scheduleExpiry();
    });
  }

  /** An attachment's bytes: kept on this device, or downloaded and checked by the SDK (then kept); `onProgress` as a fraction. */
  async fetchFile(msg: ChatMessage, onProgress: (f: number) => void = () => undefined): Promise<Uint8Array> {
    const ref = msg.attachment;
    if (!ref) throw new Error('This message has no file.');
    // Kept, or one's own file still waiting for its upload.
    const kept =
      (await this.keptBytes(ref.id)) ??
      (await this.uploads
        .get(ref.id)
        .then((f) => f?.bytes())
        .catch(() => undefined));
    if (kept) return kept;
    const pieces: Uint8Array[] = [];
    let got = 0;
    for await (const p of this.conv.attachments.download(ref, { onProgress: (d, t) => onProgress(t > 0 ? d / t : 0) })) {
      pieces.push(p);
      got += p.length;
    }
    const out = new Uint8Array(got);
    let at = 0;
    for (const p of pieces) {
      out.set(p, at);
      at += p.length;
    }
    // Kept for the history: a failure to keep it does not take the file from the person.
    await this.files.put(ref.id, out).catch((e: unknown) => console.warn('keeping a file:', e));
    return out;
  }

  /** The kept copy of a file; a damaged one is dropped (and the file downloaded again). */
  private async keptBytes(id: string): Promise<Uint8Array | undefined> {
    try {
      return await this.files.get(id);
    } catch (e) {
      console.warn('a kept file did not open:', e);
      await this.files.remove(id).catch(() => undefined);
      return undefined;
    }
  }

  /** A file as a data: URL (what the CSP lets an image show), downloaded once per attachment. */
  fileUrl(msg: ChatMessage): Promise<string> {
    const ref = msg.attachment;
    if (!ref) return Promise.reject(new Error('This message has no file.'));
    let url = this.urls.get(ref.id);
    if (!url) {
      url = this.fetchFile(msg).then(
        (bytes) =>
          new Promise<string>((resolve, reject) => {
            const r = new FileReader();
            r.onload = () => resolve(r.result as string);
            r.onerror = () => reject(r.error ?? new Error('The file could not be read.'));
            r.readAsDataURL(new Blob([bytes as BlobPart], { type: ref.mime }));
          }),
      );
      this.urls.set(ref.id, url);
      // A failure is not kept: the next look tries again.
      url.catch(() => this.urls.delete(ref.id));
    }
    return url;
  }

  /** Keeps the chat list's order, unread counts and last-message lines in step with the records. */
  private async book(c: Change): Promise<void> {
    let touched = false;
    const a = c.added;
    if (a && isShown(a)) {
      const incoming = a.from !== this.nick;
      // A muted chat raises nothing, unless the message mentions this account.
      if (incoming && (await this.conv.shouldNotify(a))) notifyHidden(this.nick, (id) => this.m.room(id)?.name, a);
      if (incoming && !this.isReading(a.chat) && this.conv.mentionsMe(a)) this.mentioned.add(a.chat);
      if (incoming && this.isMuted(a.chat) && this.conv.mentionsMe(a)) this.mentionedMuted.add(a.chat);
      await this.chats.touch(a.chat, a.ts, incoming && !this.isReading(a.chat), previewOf(a, this.nick));
      touched = true;
    }
    for (const m of c.changed) {
      if (!isShown(m)) continue;
      if (m.from === this.nick && m.state === 'sent') await this.chats.touch(m.chat, m.ts, false, previewOf(m, this.nick));
      else await this.chats.setPreview(m.chat, m.ts, previewOf(m, this.nick));
      touched = true;
    }
    // History from another device or a file: the chat moves to its newest message, and nothing
    // of it is unread (it was read, or not, on the device it came from).
    const newest = new Map<string, ChatMessage>();
    for (const m of c.imported ?? []) {
      const n = newest.get(m.chat);
      if (isShown(m) && (!n || m.ts > n.ts)) newest.set(m.chat, m);
    }
    for (const m of newest.values()) await this.chats.touch(m.chat, m.ts, false, previewOf(m, this.nick));
    // Read on another of the account's devices, or deleted: the count follows the SDK's unread.
    const recount = new Set(c.changed.filter((m) => m.from !== this.nick && (this.chats.meta(m.chat)?.unread ?? 0) > 0).map((m) => m.chat));
    for (const chat of recount) if (await this.chats.setUnread(chat, (await this.conv.unread(chat)).count)) touched = true;
    if (touched || newest.size > 0) this.publishChats();
  }

  /**
   * After each `ready` of the event stream; the first one resumes a transfer that a reload
   * interrupted (the chunks that waited in the queue are taken by then), and a device that was
   * just signed in without history asks the account's other devices for it.
   */
  async connected(): Promise<void> {
    if (this.transferLoaded) return;
    this.transferLoaded = true;
    await this.transfer.load();
    // Requests that came while this device was away, or before a reload, ask again: those of
    // devices the service still lists (a removed device's request is dropped).
    for (const request of await this.transfer.pendingRequests()) this.emit('transfer', { type: 'request', request });
    for (const progress of this.transfer.progress()) if (progress.state === 'active') this.emit('transfer', { type: 'progress', progress });
    if (this.askHistory) {
      this.askHistory = false;
      await this.transfer.request();
    }
  }

  /** Whether `chat` is the account's private room of its devices, which no view shows. */
  isHidden(chat: string): boolean {
    const { kind, id } = splitChatId(chat);
    return kind === 'room' && isTransferRoom(this.m.room(id), this.nick);
  }

  /** Reads and decrypts the whole history once, for search. */
  searchIndex(): Promise<SearchIndex> {
    this.searchLoaded ??= this.store.all().then((all) => {
      for (const m of all) this.search.put(m);
    });
    return this.searchLoaded.then(() => this.search);
  }

  async load(): Promise<void> {
    await this.files.sweep();
    await this.uploads.files.sweep();
    await this.trust.load();
    await this.chats.load();
    // What expired while the app was closed goes before anything is shown (conv.load would cut it
    // too, but the chat list's last-message lines and the kept files are the app's to clear).
    await this.expireNow();
    await this.conv.load();
    await this.loadMutes();
    await this.scheduleExpiry();

    await this.dropUploadsGone();
    await this.membership.load();
    await this.membership.update();
  }

  /**
   * Reads the draft and whether an unread message mentions this account, once for each chat the
   * list shows (rooms and contacts come in after the start), then shows the list again.
   */
  private readMarks(chats: ChatSummary[]): void {
    const fresh = chats.filter((c) => !this.marksRead.has(c.chat));
    if (fresh.length === 0) return;
    for (const c of fresh) this.marksRead.add(c.chat);
    const read = async () => {
      let changed = false;
      for (const c of fresh) {
        const chat = c.chat as ChatId;
        const draft = await this.conv.drafts.preview(chat);
        if (draft && !this.draftLines.has(chat)) {
          this.draftLines.set(chat, draft);
          changed = true;
        }
        if (c.unread > 0 && (await this.conv.unread(chat)).mentioned) {
          this.mentioned.add(chat);
          changed = true;
        }
      }
      if (changed) this.publishChats();
    };
    void read().catch((e: unknown) => console.warn('drafts and mentions:', e));
  }

  /** Keeps `text` as the chat's draft (sealed in the store); white space alone removes it. */
  async setDraft(chat: ChatId, text: string): Promise<void> {
    await this.conv.drafts.set(chat, text);
    const line = await this.conv.drafts.preview(chat);
    if (line === (this.draftLines.get(chat) ?? null)) return;
    if (line) this.draftLines.set(chat, line);
    else this.draftLines.delete(chat);
    this.publishChats();
  }

  /** The chat was read: its "Mentioned" goes. */
  readChat(chat: string): void {
    this.mentioned.delete(chat);
  }

  /**
   * Removes waiting files whose message is no longer in the outbox: the tab closed between the end
   * of an upload (or the message's deletion) and the removal of its file.
   */
  private async dropUploadsGone(): Promise<void> {
    const queued = new Set(this.conv.outbox.pending.flatMap((i) => (isAttachmentPlain(i.plain) ? [i.plain.id] : [])));
    for (const f of await this.uploads.files.list()) if (!queued.has(f.id)) await this.uploads.remove(f.id);
  }

  /** Drops a chat from the list, the store and the search index (the room was left or deleted). */
  async forgetChat(chat: ChatId): Promise<void> {
    await this.chats.forget(chat);
    await this.store.forgetChat(chat);
    this.search.forgetChat(chat);
  }

  /** The chat list as the views show it: key states, unread mentions and drafts marked. */
  summaries(): ChatSummary[] {
    const list = this.trust.annotate(this.chats.list());
    this.readMarks(list);
    for (const c of list) {
      if (this.mentioned.has(c.chat)) c.mentioned = true;
      const draft = this.draftLines.get(c.chat);
      if (draft) c.draft = draft;
    }
    return list;
  }

  publishChats(): void {
    const now = this.m.api.now();
    const list = this.summaries();
    for (const c of list) if (isMuted(this.mutes.get(c.chat), now)) c.muted = { mentioned: this.mentionedMuted.has(c.chat) };
    this.emit('chats', list);
    // Chats listed since the mutes were read (contacts and rooms arrive once online): read theirs.
    const unknown = list.filter((c) => !this.mutes.has(c.chat)).map((c) => c.chat as ChatId);
    if (unknown.length === 0) return;
    for (const chat of unknown) this.mutes.set(chat, null);
    void Promise.all(unknown.map((chat) => this.readMute(chat)))
      .then(() => {
        if (!unknown.some((chat) => this.isMuted(chat))) return;
        this.armMuteTimer();
        this.emit('mute', '');
        this.publishChats();
      })
      .catch((e: unknown) => console.warn('mute:', e));
  }

  // ---- mute ----

  /** Whether `chat` is muted now ("Unmute" in its header, "Muted" in the list). */
  isMuted(chat: string): boolean {
    return isMuted(this.mutes.get(chat), this.m.api.now());
  }

  /** Mutes `chat` until `until` (ms), always, or unmutes it (0); the account's other devices follow. */
  async setMute(chat: ChatId, until: number | 'always'): Promise<void> {
    await this.conv.setMute(chat, until);
    await this.refreshMute(chat);
  }

  /** Reads the mute of every chat in the list (at start, and when another device changed one). */
  async loadMutes(): Promise<void> {
    for (const c of this.chats.list()) await this.readMute(c.chat as ChatId);
    this.armMuteTimer();
  }

  private async readMute(chat: ChatId): Promise<void> {
    const mute = await this.conv.mute(chat);
    this.mutes.set(chat, mute);
    if (isMuted(mute, this.m.api.now()) && (await this.conv.unread(chat)).mentioned) this.mentionedMuted.add(chat);
    else this.mentionedMuted.delete(chat);
  }

  /** A chat's mute changed (here, or a `mute` message from another of the account's devices). */
  async refreshMute(chat: ChatId): Promise<void> {
    await this.readMute(chat);
    this.armMuteTimer();
    this.emit('mute', chat);
    this.publishChats();
  }

  /** A chat read: its unread mention no longer counts in the title. */
  readMuted(chat: string): void {
    if (this.mentionedMuted.delete(chat)) this.publishChats();
  }

  /** One timer for the mute that ends first, so "Muted" goes from the list when it does. */
  private armMuteTimer(): void {
    if (this.muteTimer) clearTimeout(this.muteTimer);
    this.muteTimer = null;
    const now = this.m.api.now();
    let next = Infinity;
    for (const mute of this.mutes.values()) if (mute && mute.until !== 'always' && mute.until > now) next = Math.min(next, mute.until);
    if (next === Infinity || this.closed) return;
    this.muteTimer = setTimeout(
      () => {
        this.armMuteTimer();
        this.publishChats();
      },
      Math.min(next - now + 50, MAX_TIMER_MS),
    );
  }

  // ---- disappearing messages ----

  /** Sets the one timer for the message that disappears next; called whenever a deadline may have changed. */
  async scheduleExpiry(): Promise<void> {
    const next = await this.conv.nextExpiry();
    if (this.closed) return;
    if (next?.at === this.expiryAt && this.expiryTimer) return;
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    this.expiryTimer = null;
    this.expiryAt = next?.at ?? null;
    if (!next) return;
    const wait = Math.max(0, Math.min(next.at - this.m.api.now(), MAX_TIMER_MS));
    this.expiryTimer = setTimeout(() => {
      this.expiryTimer = null;
      this.expiryAt = null;
      void this.expireNow()
        .catch((e: unknown) => console.warn('disappearing messages:', e))
        .then(() => this.scheduleExpiry());
    }, wait);
  }

  /**
   * Cuts every message whose timer ran out (the SDK makes their records tombstones and tells the
   * views), then drops what the app keeps of them: search index entries, kept files, notifications
   * shown for their chats, and the chat list's last-message line when it was one of them.
   */
  async expireNow(): Promise<number> {
    const { records, attachments } = await this.conv.expireDue();
    for (const m of records) this.search.remove(m.id);
    for (const id of attachments) {
      this.urls.delete(id);
      await this.files.remove(id).catch((e: unknown) => console.warn('removing a kept file:', e));
    }
    const chats = new Set(records.map((m) => m.chat));
    for (const chat of chats) {
      closeNotifications(chat);
      const last = (await this.store.chat(chat, { limit: 50 })).filter(isShown).at(-1);
      await this.chats.replacePreview(chat, last ? previewOf(last, this.nick) : undefined);
    }
    if (chats.size > 0) this.publishChats();
    return records.length;
  }

  /** Whether a message in `chat` is being read right now. */
  isReading(chat: string): boolean {
    return this.openChat === chat && document.visibilityState === 'visible';
  }

  /** Stops sending (sign-out, the session ended). */
  close(): void {
    this.closed = true;
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    if (this.muteTimer) clearTimeout(this.muteTimer);
    this.conv.stop();
  }
}
