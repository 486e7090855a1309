/**
 * A signed-in account on this device: the SDK Messenger and its conversation layer (Conversations
 * over the sealed IndexedDB store), plus what this browser keeps for the views (pins, chat list).
 * It is the app's one owner of state: views read it and subscribe to its typed events (`on`);
 * other modules (the event stream, the connection, room actions) tell it what happened through its
 * named actions, and it alone emits.
 */
import type { Contact, Device, Room } from '@svc/protocol';
import {
  Conversations,
  SearchIndex,
  attachTransfer,
  exportHistory,
  importHistory,
  isAttachmentPlain,
  isShown,
  isTransferRoom,
  safetyNumber,
  splitChatId,
  type BlobLike,
  type Change,
  type ChatId,
  type ChatMessage,
  type ConnectionState,
  type ExportResult,
  type HistoryTransfer,
  type ImportResult,
  type KeptFilesSource,
  type Messenger,
  type TransferEvent,
} from '@svc/sdk';
import { AttachmentBytes } from './attachment-bytes.js';
import { ChatList, type ChatSummary } from './chats.js';
import { Emitter } from './emitter.js';
import { Db } from './idb.js';
import { Membership } from './membership.js';
import { ChatMutes } from './mutes.js';
import { closeNotifications, notifyHidden } from './notify.js';
import { KeptFiles, uploadFiles } from './keptfiles.js';
import { keptSource } from './keptsource.js';
import { IdbConversationStore } from './conversation-store.js';
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
export function previewOf(message: ChatMessage, me: string): string {
  const who = message.from === me ? 'You' : message.from;
  if (message.deleted) return `${who}: Message deleted`;
  if (message.kind === 'text' && message.attachment && !message.body)
    return `${who}: ${message.attachment.type === 'photo' ? 'Photo' : message.attachment.type === 'voice' ? 'Voice message' : message.attachment.name}`;
  if (message.kind === 'text') return `${who}: ${(message.body ?? '').replace(/\s+/g, ' ').slice(0, 80)}`;
  return `${who}: ${message.kind === 'unknown' ? 'Message for a newer version of the app' : 'Message that could not be decrypted'}`;
}

export class Session {
  /** What changed, for the views; only the session's own methods emit on it. */
  private readonly events = new Emitter<SessionEvents>();
  readonly nick: string;
  readonly store: IdbConversationStore;
  readonly conv: Conversations;
  readonly trust: Trust;
  readonly chats: ChatList;
  readonly membership: Membership;
  /** The search index, in memory only; filled from the store the first time a search runs. */
  readonly search = new SearchIndex();
  private searchLoaded: Promise<void> | null = null;
  /** Received files, sealed in this device's store (at most a byte budget of them). */
  readonly files: KeptFiles;
  /** Files sent from this device until their upload finished, sealed in its store. */
  readonly uploads: ReturnType<typeof uploadFiles>;
  /** The kept files as a history export, import or transfer reads and writes them. */
  readonly kept: KeptFilesSource;
  /** A message's file for the views, kept or downloaded. */
  private readonly attachments: AttachmentBytes;
  private connState: ConnectionState = 'connecting';
  /** The chat on screen, so arriving messages there do not count as unread. */
  private openChat: string | null = null;
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
  /** Each chat's mute, and the muted chats with an unread mention of this account. */
  private readonly mutes: ChatMutes;
  private muteTimer: ReturnType<typeof setTimeout> | null = null;
  /** The one timer of the next disappearing message, and when it fires (ms, the service's clock). */
  private expiryTimer: ReturnType<typeof setTimeout> | null = null;
  private expiryAt: number | null = null;
  private closed = false;
  private readonly closing = new AbortController();

  constructor(
    readonly messenger: Messenger,
    readonly db: Db,
    readonly deviceId: string,
  ) {
    this.nick = messenger.nick;
    const tags = new Tags(messenger.indexKey);
    this.store = new IdbConversationStore(db, messenger.historyKey, tags);
    this.files = new KeptFiles(db, messenger.historyKey, tags);
    this.uploads = uploadFiles(db, messenger.historyKey, tags);
    // A message deleted, or its chat forgotten: its kept file goes too.
    this.store.filesGone = async (ids) => {
      for (const id of ids) {
        this.attachments.forget(id);
        await this.files.remove(id);
      }
    };
    this.kept = keptSource(this.files);
    this.conv = new Conversations({
      messenger,
      store: this.store,
      // Files wait here for their upload, so a reload or a cut network resumes it.
      files: this.uploads,
      onError: (e) => console.warn('membership record or attachment:', e),
    });
    this.attachments = new AttachmentBytes(this.files, this.uploads, this.conv);
    this.mutes = new ChatMutes(this.conv, () => this.now());
    this.conv.membership.on((roomId) => {
      this.events.emit('membership', roomId);
      // A room's log tells of members joining and leaving as its record changes.
      void this.membership.update().catch((e: unknown) => console.warn('membership lines:', e));
    });
    this.trust = new Trust(db, messenger.historyKey, tags, { nick: messenger.nick, publicKey: messenger.publicKey });
    this.trust.onChange = () => {
      this.events.emit('trust', undefined);
      this.publishChats();
    };
    this.chats = new ChatList(messenger, db, tags);
    this.membership = new Membership(this);
    // The history goes as an archive in the attachment store, with the files kept here.
    this.transfer = attachTransfer(messenger, this.conv, deviceId, { kept: this.kept });
    this.transfer.on((e) => this.events.emit('transfer', e));
    this.conv.on((change) => {
      for (const id of change.removed ?? []) this.search.remove(id);
      for (const message of [...change.changed, ...(change.added ? [change.added] : []), ...(change.imported ?? [])]) this.search.put(message);
      this.events.emit('change', change);
      void this.book(change).catch((e: unknown) => console.warn('chat list:', e));
      // A message with a timer was sent or seen: its deadline may be the next one.
      if (
        [...change.changed, ...(change.added ? [change.added] : []), ...(change.imported ?? [])].some(
          (m) => m.expire && m.seenAt !== undefined && !m.expired,
        )
      )
        void this.scheduleExpiry();
    });
  }

  /** Calls `fn` with each change of one kind; returns the function that stops it. */
  on<K extends keyof SessionEvents>(name: K, fn: (payload: SessionEvents[K]) => void): () => void {
    return this.events.on(name, fn);
  }

  /** The connection to the service as the header shows it. */
  get conn(): ConnectionState {
    return this.connState;
  }

  // ---- what other modules tell the session (each emits what the views wait on) ----

  /** The connection to the service changed (connection.ts, sync.ts). */
  connectionChanged(state: ConnectionState): void {
    this.connState = state;
    this.events.emit('conn', state);
  }

  /** The service ended this session, or removed this device: the app goes back to the sign-in screen. */
  endedByService(reason: 'session_ended' | 'device_removed'): void {
    this.events.emit('ended', reason);
  }

  /** Something failed in the background that the person should know about; the banner says `text`. */
  reportProblem(text: string): void {
    this.events.emit('problem', text);
  }

  /** The rooms changed (listed, created, their members or key): room views read them again, and the chat list follows. */
  roomsChanged(): void {
    this.events.emit('rooms', undefined);
    this.publishChats();
  }

  /**
   * This account left or deleted a room: its membership lines, record, history and list entry go,
   * and a view showing it closes (`gone`).
   */
  async forgetRoom(roomId: string): Promise<void> {
    const chat: ChatId = `room:${roomId}`;
    await this.membership.forget(roomId);
    await this.conv.membership.forget(roomId);
    await this.forgetChat(chat);
    this.events.emit('gone', chat);
    this.roomsChanged();
  }

  /**
   * The service listed the account's contacts: the chat list and the key pins follow, and a DM
   * peer no longer listed is checked (a deleted account), before anyone tries to send.
   */
  async contactsListed(contacts: Contact[]): Promise<void> {
    this.chats.setContacts(contacts);
    for (const contact of contacts) await this.trust.observe(contact.nick, contact.publicKey);
    await this.membership.checkPeers(new Set(contacts.map((contact) => contact.nick)));
    this.publishChats();
  }

  /** A DM was started with `peer`: it is listed, and its key pinned on first sight. */
  async contactAdded(peer: { nick: string; publicKey: string }): Promise<void> {
    this.chats.addContact({ nick: peer.nick, publicKey: peer.publicKey, createdAt: this.now() });
    await this.trust.observe(peer.nick, peer.publicKey);
    this.publishChats();
  }

  /** Another of the account's devices muted or unmuted a chat: the header and the list follow. */
  async mutesChangedElsewhere(): Promise<void> {
    await this.loadMutes();
    this.events.emit('mute', '');
    this.publishChats();
  }

  /** An attachment's bytes: kept on this device, or downloaded and checked by the SDK (then kept); `onProgress` as a fraction. */
  fetchFile(msg: ChatMessage, onProgress?: (fraction: number) => void): Promise<Uint8Array> {
    return this.attachments.bytes(msg, onProgress);
  }

  /** A file as a data: URL (what the CSP lets an image show), downloaded once per attachment. */
  fileUrl(msg: ChatMessage): Promise<string> {
    return this.attachments.dataUrl(msg);
  }

  /** Keeps the chat list's order, unread counts and last-message lines in step with the records. */
  private async book(change: Change): Promise<void> {
    let touched = false;
    const added = change.added;
    if (added && isShown(added)) {
      const incoming = added.from !== this.nick;
      // A muted chat raises nothing, unless the message mentions this account.
      if (incoming && (await this.conv.shouldNotify(added))) notifyHidden(this.nick, (id) => this.messenger.room(id)?.name, added);
      if (incoming && !this.isReading(added.chat) && this.conv.mentionsMe(added)) this.mentioned.add(added.chat);
      if (incoming && this.conv.mentionsMe(added)) this.mutes.mentionArrived(added.chat);
      await this.chats.touch(added.chat, added.ts, incoming && !this.isReading(added.chat), previewOf(added, this.nick));
      touched = true;
    }
    for (const message of change.changed) {
      if (!isShown(message)) continue;
      if (message.from === this.nick && message.state === 'sent')
        await this.chats.touch(message.chat, message.ts, false, previewOf(message, this.nick));
      else await this.chats.setPreview(message.chat, message.ts, previewOf(message, this.nick));
      touched = true;
    }
    // History from another device or a file: the chat moves to its newest message, and nothing
    // of it is unread (it was read, or not, on the device it came from).
    const newest = new Map<string, ChatMessage>();
    for (const message of change.imported ?? []) {
      const newestSoFar = newest.get(message.chat);
      if (isShown(message) && (!newestSoFar || message.ts > newestSoFar.ts)) newest.set(message.chat, message);
    }
    for (const message of newest.values()) await this.chats.touch(message.chat, message.ts, false, previewOf(message, this.nick));
    // Read on another of the account's devices, or deleted: the count follows the SDK's unread.
    const recount = new Set(change.changed.filter((m) => m.from !== this.nick && (this.chats.meta(m.chat)?.unread ?? 0) > 0).map((m) => m.chat));
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
    for (const request of await this.transfer.pendingRequests()) this.events.emit('transfer', { type: 'request', request });
    for (const progress of this.transfer.progress()) if (progress.state === 'active') this.events.emit('transfer', { type: 'progress', progress });
    if (this.askHistory) {
      this.askHistory = false;
      await this.transfer.request();
    }
  }

  /** Whether `chat` is the account's private room of its devices, which no view shows. */
  isHidden(chat: string): boolean {
    const { kind, id } = splitChatId(chat);
    return kind === 'room' && isTransferRoom(this.messenger.room(id), this.nick);
  }

  /** Reads and decrypts the whole history once, for search. */
  searchIndex(): Promise<SearchIndex> {
    this.searchLoaded ??= this.store.all().then((all) => {
      for (const message of all) this.search.put(message);
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
    for (const entry of fresh) this.marksRead.add(entry.chat);
    const read = async () => {
      let changed = false;
      for (const entry of fresh) {
        const chat = entry.chat as ChatId;
        const draft = await this.conv.drafts.preview(chat);
        if (draft && !this.draftLines.has(chat)) {
          this.draftLines.set(chat, draft);
          changed = true;
        }
        if (entry.unread > 0 && (await this.conv.unread(chat)).mentioned) {
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

  /** The chat on screen changed (null: none). */
  chatOnScreen(chat: string | null): void {
    this.openChat = chat;
  }

  /**
   * The open chat was looked at while the person is reading it (the page visible): its unread
   * count and its "Mentioned" go, and the SDK marks `shown` read (receipts to the sender).
   */
  markChatRead(chat: ChatId, shown: ChatMessage[]): void {
    // Only while the person sees the chat: in a background tab its messages stay unread (the
    // chat list's count and the title); showing the tab again reads them.
    if (!this.isReading(chat)) return;
    this.mentioned.delete(chat);
    void this.conv.markRead(chat, shown).catch(() => undefined);
    if (this.mutes.mentionRead(chat)) this.publishChats();
    void this.chats.markRead(chat).then(() => this.publishChats());
  }

  /**
   * Removes waiting files whose message is no longer in the outbox: the tab closed between the end
   * of an upload (or the message's deletion) and the removal of its file.
   */
  private async dropUploadsGone(): Promise<void> {
    const queued = new Set(this.conv.outbox.pending.flatMap((i) => (isAttachmentPlain(i.plain) ? [i.plain.id] : [])));
    for (const file of await this.uploads.files.list()) if (!queued.has(file.id)) await this.uploads.remove(file.id);
  }

  /** Drops a chat from the list, the store and the search index (the room was left or deleted). */
  private async forgetChat(chat: ChatId): Promise<void> {
    await this.chats.forget(chat);
    await this.store.forgetChat(chat);
    this.search.forgetChat(chat);
  }

  /** "Delete chat" of a chat that became read-only: its history and its entry in the list go. */
  async deleteChat(chat: ChatId): Promise<void> {
    await this.forgetChat(chat);
    this.publishChats();
  }

  /** The chat list as the views show it: key states, unread mentions and drafts marked. */
  summaries(): ChatSummary[] {
    const list = this.trust.annotate(this.chats.list());
    this.readMarks(list);
    for (const entry of list) {
      if (this.mentioned.has(entry.chat)) entry.mentioned = true;
      const draft = this.draftLines.get(entry.chat);
      if (draft) entry.draft = draft;
    }
    return list;
  }

  /** Emits the chat list as it is now (`chats`); the app calls it once when the signed-in screen first shows. */
  publishChats(): void {
    const list = this.summaries();
    for (const entry of list) {
      const muted = this.mutes.mark(entry.chat);
      if (muted) entry.muted = muted;
    }
    this.events.emit('chats', list);
    // Chats listed since the mutes were read (contacts and rooms arrive once online): read theirs.
    const unknown = this.mutes.firstSeen(list.map((entry) => entry.chat));
    if (unknown.length === 0) return;
    void Promise.all(unknown.map((chat) => this.mutes.read(chat)))
      .then(() => {
        if (!unknown.some((chat) => this.isMuted(chat))) return;
        this.armMuteTimer();
        this.events.emit('mute', '');
        this.publishChats();
      })
      .catch((e: unknown) => console.warn('mute:', e));
  }

  // ---- what the views ask of the account (they never reach the Messenger themselves) ----

  /** The time by the service's clock (ms), in which mutes and disappearing messages are counted. */
  now(): number {
    return this.messenger.api.now();
  }

  /** A room as the service lists it to this account, or undefined (not in it, or not listed yet). */
  room(roomId: string): Room | undefined {
    return this.messenger.room(roomId);
  }

  /** The account's devices (Settings → "Devices"). */
  devices(): Promise<Device[]> {
    return this.messenger.api.devices();
  }

  /** Removes one of the account's devices; removing this one ends the session (the caller signs out). */
  removeDevice(deviceId: string): Promise<void> {
    return this.messenger.api.deleteDevice(deviceId);
  }

  /**
   * A DM was opened: the peer's key is checked (and pinned on first use), and a peer who deleted
   * their account is found out now, before the person tries to send.
   */
  dmOpened(peer: string): void {
    void this.messenger.peerKey(peer, 'receive').catch(() => undefined);
    void this.membership.checkPeer(peer).then((gone) => gone && this.publishChats());
  }

  /** A peer's key as the service gives it for reading; the first one seen is pinned. */
  peerKey(peer: string): Promise<string> {
    return this.messenger.peerKey(peer, 'receive');
  }

  /** The safety number of this account and `peer` holding `key`, as 60 digits. */
  safetyNumber(peer: string, key: string): Promise<string> {
    return safetyNumber(this.nick, this.messenger.publicKey, peer, key);
  }

  /** "Accept new key": the peer's changed key is trusted, and sends to them use it from now on. */
  async acceptNewKey(peer: string): Promise<void> {
    await this.trust.accept(peer);
    this.messenger.forgetPeer(peer);
  }

  /** The history on this device as a file sealed under the account's export key; `withFiles`: the kept files go in too. */
  exportHistory(withFiles: boolean): Promise<ExportResult> {
    return exportHistory({ nick: this.nick, exportKey: this.messenger.exportKey }, this.store, Date.now(), withFiles ? { files: this.kept } : {});
  }

  /** Merges an exported history file (and the files it carries) into this device's history. */
  importHistory(file: BlobLike): Promise<ImportResult> {
    return importHistory({ nick: this.nick, exportKey: this.messenger.exportKey }, this.conv, file, { files: this.kept });
  }

  // ---- mute ----

  /** Whether `chat` is muted now ("Unmute" in its header, "Muted" in the list). */
  isMuted(chat: string): boolean {
    return this.mutes.isMuted(chat);
  }

  /** Mutes `chat` until `until` (ms), always, or unmutes it (0); the account's other devices follow. */
  async setMute(chat: ChatId, until: number | 'always'): Promise<void> {
    await this.conv.setMute(chat, until);
    await this.mutes.read(chat);
    this.armMuteTimer();
    this.events.emit('mute', chat);
    this.publishChats();
  }

  /** Reads the mute of every chat in the list (at start, and when another device changed one). */
  private async loadMutes(): Promise<void> {
    for (const entry of this.chats.list()) await this.mutes.read(entry.chat as ChatId);
    this.armMuteTimer();
  }

  /** One timer for the mute that ends first, so "Muted" goes from the list when it does. */
  private armMuteTimer(): void {
    if (this.muteTimer) clearTimeout(this.muteTimer);
    this.muteTimer = null;
    const next = this.mutes.nextEnd();
    if (next === null || this.closed) return;
    const now = this.now();
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
  private async scheduleExpiry(): Promise<void> {
    const next = await this.conv.nextExpiry();
    if (this.closed) return;
    if (next?.at === this.expiryAt && this.expiryTimer) return;
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    this.expiryTimer = null;
    this.expiryAt = next?.at ?? null;
    if (!next) return;
    const wait = Math.max(0, Math.min(next.at - this.now(), MAX_TIMER_MS));
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
  private async expireNow(): Promise<number> {
    const { records, attachments } = await this.conv.expireDue();
    for (const message of records) this.search.remove(message.id);
    for (const id of attachments) {
      this.attachments.forget(id);
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

  /** Whether a message in `chat` is being read right now (never without a page, as in the unit tests in Node). */
  isReading(chat: string): boolean {
    // Without a page (the app's logic under Node) the chat on screen is the one being read.
    return this.openChat === chat && (typeof document === 'undefined' || document.visibilityState === 'visible');
  }

  /** Aborted when the session closes: listeners a view added to the document go with it. */
  get closedSignal(): AbortSignal {
    return this.closing.signal;
  }

  /** Stops sending (sign-out, the session ended). */
  close(): void {
    this.closed = true;
    this.closing.abort();
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    if (this.muteTimer) clearTimeout(this.muteTimer);
    this.conv.stop();
  }
}
