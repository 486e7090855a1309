/**
 * A signed-in account on this device: the SDK Messenger and its conversation layer (Conversations
 * over the sealed IndexedDB store), plus what this browser keeps for the views (pins, chat list).
 * It is the app's one owner of state: views read it, call its named actions (its own methods, and
 * `messages`, `keys` and `history` for a chat's messages, the peers' keys and the history as a
 * whole) and subscribe to its typed events (`on`); other modules (the event stream, the
 * connection, room actions) tell it what happened through its named actions, and it alone emits.
 */
import type { Contact, Device, Room } from '@svc/protocol';
import {
  Conversations,
  isTransferRoom,
  splitChatId,
  type ChatId,
  type ChatMessage,
  type ConnectionState,
  type MembershipStatus,
  type Messenger,
  type SearchIndex,
} from '@svc/sdk';
import { AttachmentBytes } from './attachment-bytes.js';
import { ChatBookkeeping } from './chat-bookkeeping.js';
import { ChatMarks } from './chat-marks.js';
import { ChatSearch } from './chat-search.js';
import { ChatList, type ChatMeta, type ChatSummary } from './chats.js';
import { DisappearingMessages } from './disappearing.js';
import { Emitter } from './emitter.js';
import { HistoryActions } from './history-actions.js';
import { Db } from './idb.js';
import { KeyActions } from './key-actions.js';
import { Membership } from './membership.js';
import { MessageActions } from './message-actions.js';
import { ChatMutes } from './mutes.js';
import { KeptFiles, dropUploadsGone, uploadFiles } from './keptfiles.js';
import { IdbConversationStore } from './conversation-store.js';
import type { SessionEvents } from './session-events.js';
import { Tags } from './tags.js';
import { Trust } from './trust.js';

export type { EndReason, SessionEvents } from './session-events.js';

export class Session {
  /** What changed, for the views; only the session's own methods emit on it. */
  private readonly events = new Emitter<SessionEvents>();
  readonly nick: string;
  readonly store: IdbConversationStore;
  readonly conv: Conversations;
  readonly trust: Trust;
  readonly chats: ChatList;
  readonly membership: Membership;
  /** What the views do with a chat's messages and read of them. */
  readonly messages: MessageActions;
  /** What the views do with the peers' keys: trust states, safety numbers, "Accept new key". */
  readonly keys: KeyActions;
  /** The history as a file to export or import, and its transfer between the account's devices. */
  readonly history: HistoryActions;
  /** "Search messages", in memory only. */
  readonly search: ChatSearch;
  /** Received files, sealed in this device's store (at most a byte budget of them). */
  readonly files: KeptFiles;
  /** Files sent from this device until their upload finished, sealed in its store. */
  readonly uploads: ReturnType<typeof uploadFiles>;
  /** A message's file for the views, kept or downloaded. */
  private readonly attachments: AttachmentBytes;
  private connState: ConnectionState = 'connecting';
  /** The chat on screen, so arriving messages there do not count as unread. */
  private openChat: string | null = null;
  /** Set by a sign-in on a device without history: it asks the other devices once it is connected. */
  askHistory = false;
  private transferLoaded = false;
  /** Each chat's draft and unread mention, as the chat list marks them. */
  private readonly marks: ChatMarks;
  /** Each chat's mute, and the muted chats with an unread mention of this account. */
  private readonly mutes: ChatMutes;
  private readonly disappearing: DisappearingMessages;
  private readonly bookkeeping: ChatBookkeeping;
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
    this.search = new ChatSearch(this.store, this.closing.signal);
    this.conv = new Conversations({
      messenger,
      // Through the search index, which every record write keeps in step.
      store: this.search.store,
      // Files wait here for their upload, so a reload or a cut network resumes it.
      files: this.uploads,
      onError: (e) => console.warn('membership record or attachment:', e),
    });
    this.attachments = new AttachmentBytes(this.files, this.uploads, this.conv);
    this.messages = new MessageActions(this.conv, this.store, this.attachments);
    this.marks = new ChatMarks(this.conv);
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
    this.keys = new KeyActions(this.trust, messenger, this.conv);
    this.chats = new ChatList(messenger, db, tags);
    this.membership = new Membership(this);
    const { nick, conv, store, chats, files, attachments } = this;
    this.disappearing = new DisappearingMessages({ nick, conv, store, chats, files, attachments, now: () => this.now() }, () => this.publishChats());
    this.bookkeeping = new ChatBookkeeping(conv, chats, this.marks, this.mutes, messenger, (chat) => this.isReading(chat));
    this.history = new HistoryActions(messenger, this.conv, this.store, this.files, deviceId);
    this.history.onTransfer((event) => this.events.emit('transfer', event));
    this.conv.on((change) => {
      this.events.emit('change', change);
      void this.bookkeeping
        .book(change)
        .then((touched) => touched && this.publishChats())
        .catch((e: unknown) => console.warn('chat list:', e));
      this.disappearing.follow(change);
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

  /**
   * After each `ready` of the event stream; the first one resumes a transfer that a reload
   * interrupted (the chunks that waited in the queue are taken by then), and a device that was
   * just signed in without history asks the account's other devices for it.
   */
  async connected(): Promise<void> {
    if (this.transferLoaded) return;
    this.transferLoaded = true;
    for (const event of await this.history.resume()) this.events.emit('transfer', event);
    if (this.askHistory) {
      this.askHistory = false;
      await this.history.request();
    }
  }

  async load(): Promise<void> {
    await this.files.sweep();
    await this.uploads.files.sweep();
    await this.trust.load();
    await this.chats.load();
    // What expired while the app was closed goes before anything is shown (conv.load would cut it
    // too, but the chat list's last-message lines and the kept files are the app's to clear).
    await this.disappearing.expireNow();
    await this.conv.load();
    await this.loadMutes();
    await this.disappearing.schedule();

    await dropUploadsGone(this.uploads, this.conv.outbox.pending);
    await this.membership.load();
    await this.membership.update();
  }

  // ---- the chat list, and what the views do with a chat ----

  /** The chat list as the views show it: key states, unread mentions and drafts marked. */
  summaries(): ChatSummary[] {
    const list = this.trust.annotate(this.chats.list());
    void this.marks
      .readFirstSeen(list)
      .then((changed) => changed && this.publishChats())
      .catch((e: unknown) => console.warn('drafts and mentions:', e));
    this.marks.mark(list);
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
    void this.mutes
      .readFirstSeen(list.map((entry) => entry.chat))
      .then((anyMuted) => {
        if (!anyMuted) return;
        this.mutes.armTimer(() => this.publishChats());
        this.events.emit('mute', '');
        this.publishChats();
      })
      .catch((e: unknown) => console.warn('mute:', e));
  }

  /** What the list keeps of a chat besides its messages: a room left (and its name), a DM peer gone. */
  chatMeta(chat: string): Readonly<ChatMeta> | undefined {
    return this.chats.meta(chat);
  }

  /** The chat's draft, as the composer opens with it. */
  draft(chat: ChatId): Promise<string> {
    return this.marks.draft(chat);
  }

  /** Keeps `text` as the chat's draft (sealed in the store); white space alone removes it. */
  async setDraft(chat: ChatId, text: string): Promise<void> {
    if (await this.marks.setDraft(chat, text)) this.publishChats();
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
    const mentioned = this.marks.chatRead(chat);
    void this.conv.markRead(chat, shown).catch(() => undefined);
    if (this.mutes.mentionRead(chat) || mentioned) this.publishChats();
    void this.chats.markRead(chat).then((changed) => changed && this.publishChats());
  }

  /** Whether a message in `chat` is being read right now (never without a page, as in the unit tests in Node). */
  isReading(chat: string): boolean {
    // Without a page (the app's logic under Node) the chat on screen is the one being read.
    return this.openChat === chat && (typeof document === 'undefined' || document.visibilityState === 'visible');
  }

  /** Drops a chat from the list, the store and the search index (the room was left or deleted). */
  private async forgetChat(chat: ChatId): Promise<void> {
    await this.chats.forget(chat);
    await this.search.forgetChat(chat);
  }

  /** "Delete chat" of a chat that became read-only: its history and its entry in the list go. */
  async deleteChat(chat: ChatId): Promise<void> {
    await this.forgetChat(chat);
    this.publishChats();
  }

  /**
   * A DM was opened: the peer's key is checked (and pinned on first use), and a peer who deleted
   * their account is found out now, before the person tries to send.
   */
  dmOpened(peer: string): void {
    void this.messenger.peerKey(peer, 'receive').catch(() => undefined);
    void this.membership.checkPeer(peer).then((gone) => gone && this.publishChats());
  }

  /** Whether `chat` is the account's private room of its devices, which no view shows. */
  isHidden(chat: string): boolean {
    const { kind, id } = splitChatId(chat);
    return kind === 'room' && isTransferRoom(this.messenger.room(id), this.nick);
  }

  /** The search index: its stored parts opened, or the history read once to build them. */
  searchIndex(): Promise<SearchIndex> {
    return this.search.ready();
  }

  /** Writes the search index's pending parts: the lock does, before the database closes. */
  flushSearch(): Promise<void> {
    return this.search.flush();
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
    this.mutes.armTimer(() => this.publishChats());
    this.events.emit('mute', chat);
    this.publishChats();
  }

  /** Reads the mute of every chat in the list (at start, and when another device changed one). */
  private async loadMutes(): Promise<void> {
    // All at once: one after another, a couple of hundred chats held the start for a read each.
    await Promise.all(this.chats.list().map((entry) => this.mutes.read(entry.chat as ChatId)));
    this.mutes.armTimer(() => this.publishChats());
  }

  // ---- the account, its rooms and devices (views never reach the Messenger themselves) ----

  /** The time by the service's clock (ms), in which mutes and disappearing messages are counted. */
  now(): number {
    return this.messenger.api.now();
  }

  /** A room as the service lists it to this account, or undefined (not in it, or not listed yet). */
  room(roomId: string): Room | undefined {
    return this.messenger.room(roomId);
  }

  /** The room's membership record (owner, members) and how it stands against the service's list. */
  roomMembership(roomId: string): MembershipStatus {
    return this.conv.membership.status(roomId);
  }

  /** Whether the room's membership record names this account its owner. */
  ownsRoom(roomId: string): boolean {
    return this.conv.membership.isOwner(roomId);
  }

  /** The account's devices (Settings → "Devices"). */
  devices(): Promise<Device[]> {
    return this.messenger.api.devices();
  }

  /** Removes one of the account's devices; removing this one ends the session (the caller signs out). */
  removeDevice(deviceId: string): Promise<void> {
    return this.messenger.api.deleteDevice(deviceId);
  }

  /** Aborted when the session closes: listeners a view added to the document go with it. */
  get closedSignal(): AbortSignal {
    return this.closing.signal;
  }

  /** Stops sending (sign-out, the session ended). */
  close(): void {
    this.closing.abort();
    void this.search.close().catch((e: unknown) => console.warn('search index:', e));
    this.disappearing.stop();
    this.mutes.stop();
    this.conv.stop();
  }
}
