/**
 * The chat list model: one entry per DM peer (contacts and anyone who wrote) and per room this
 * account is in, ordered by last activity, with unread counts and the last message's text kept
 * per chat in IndexedDB, sealed under the history key like the messages, the row named by a tag
 * of the chat id (tags.ts), so neither the chat nor its counts can be read from it.
 */
import type { Contact } from '@svc/protocol';
import { isTransferRoom, openAtRest, sealAtRest, type ChatMessage, type Messenger, type Sealed } from '@svc/sdk';
import { STORES, type Db, type Row } from './idb.js';
import { splitChat } from './route.js';
import type { Tags } from './tags.js';

/** Per-chat bookkeeping for the chat list. */
export interface ChatMeta {
  chat: string;
  lastTs: number;
  unread: number;
  /** The last message as the list shows it ("bob: hello"), decrypted locally. */
  preview?: string;
  /** A room this account is no longer in, kept read-only with its history until deleted from the list. */
  left?: boolean;
  /** The room's name, remembered for when it is left. */
  title?: string;
  /** A DM peer who deleted their account. */
  gone?: boolean;
}

/** The row: `k` is the tag of the chat id; the meta, chat id included, is sealed. */
export interface MetaRow extends Row {
  sealed: Sealed;
}

const metaCtx = (k: string) => `chat|${k}`;

/** The row a chat's meta is stored as (also for moving an old database, migrate.ts). */
export async function metaRow(key: CryptoKey, tags: Tags, meta: ChatMeta): Promise<MetaRow> {
  const rowKey = await tags.chatMeta(meta.chat);
  return { k: rowKey, sealed: await sealAtRest(key, meta, metaCtx(rowKey)) };
}

export interface ChatSummary {
  chat: string;
  kind: 'dm' | 'room';
  /** The peer's nick or the room's name: the entry's accessible name. */
  title: string;
  lastTs: number;
  unread: number;
  preview?: string;
  /** Why the chat is read-only: a room one was removed from, a peer who deleted their account. */
  closed?: string;
  /** DMs only, set by Trust.annotate: the peer's pinned key is marked verified. */
  verified?: boolean;
  /** DMs only, set by Trust.annotate: the peer's key changed and the change is not accepted yet. */
  keyChanged?: boolean;
  /** An unread message of the chat mentions this account (set by the session). */
  mentioned?: boolean;
  /** The chat's draft as the list shows it, "Draft: <first line>" (set by the session). */
  draft?: string;
  /** Set by Session.publishChats when the chat is muted now; `mentioned`: an unread message mentions this account. */
  muted?: { mentioned: boolean };
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

export class ChatList {
  private contacts = new Map<string, Contact>();
  private metas = new Map<string, ChatMeta>();

  constructor(
    private readonly messenger: Messenger,
    private readonly db: Db,
    private readonly tags: Tags,
  ) {}

  async load(): Promise<void> {
    // Opened all at once (the start waits for them), kept in the stored order.
    const rows = await this.db.all<MetaRow>(STORES.chats);
    const opened = await Promise.all(
      rows.map((row) =>
        openAtRest(this.messenger.historyKey, row.sealed, metaCtx(row.k)).then(
          (meta) => meta as ChatMeta,
          () => undefined, // a row that does not open starts afresh
        ),
      ),
    );
    for (const meta of opened) if (meta && typeof meta.chat === 'string') this.metas.set(meta.chat, meta);
  }

  private async save(meta: ChatMeta): Promise<void> {
    await this.db.put(STORES.chats, await metaRow(this.messenger.historyKey, this.tags, meta));
  }

  setContacts(list: Contact[]): void {
    this.contacts = new Map(list.map((c) => [c.nick, c]));
  }

  addContact(contact: Contact): void {
    this.contacts.set(contact.nick, contact);
  }

  contact(nick: string): Contact | undefined {
    return this.contacts.get(nick);
  }

  list(): ChatSummary[] {
    const out = new Map<string, ChatSummary>();
    const metaOf = (chat: string) => this.metas.get(chat);
    for (const contact of this.contacts.values()) {
      const chat = `dm:${contact.nick}`;
      const meta = metaOf(chat);
      out.set(chat, {
        chat,
        kind: 'dm',
        title: contact.nick,
        lastTs: Math.max(meta?.lastTs ?? 0, contact.createdAt),
        unread: meta?.unread ?? 0,
        ...withPreview(meta),
      });
    }
    for (const meta of this.metas.values()) {
      const { kind, id } = splitChat(meta.chat);
      if (kind === 'dm' && !out.has(meta.chat))
        out.set(meta.chat, { chat: meta.chat, kind, title: id, lastTs: meta.lastTs, unread: meta.unread, ...withPreview(meta) });
      if (kind === 'dm' && meta.gone) out.get(meta.chat)!.closed = `${id} deleted their account`;
      if (kind === 'room' && meta.left && !this.messenger.room(id)) {
        const title = meta.title ?? 'Room';
        out.set(meta.chat, {
          chat: meta.chat,
          kind,
          title,
          lastTs: meta.lastTs,
          unread: meta.unread,
          ...withPreview(meta),
          closed: `You were removed from ${title}`,
        });
      }
    }
    for (const room of this.messenger.rooms) {
      // The account's private room of its devices carries the history transfer; it is no chat.
      if (isTransferRoom(room, this.messenger.nick)) continue;
      const chat = `room:${room.id}`;
      const meta = metaOf(chat);
      out.set(chat, {
        chat,
        kind: 'room',
        title: room.name,
        lastTs: Math.max(meta?.lastTs ?? 0, room.createdAt),
        unread: meta?.unread ?? 0,
        ...withPreview(meta),
      });
    }
    return [...out.values()].sort((a, b) => b.lastTs - a.lastTs || a.title.localeCompare(b.title));
  }

  /**
   * A message arrived or was sent: the chat moves up; `unread` counts one more when not being
   * read; `preview` becomes the list's last-message line when this is the newest message.
   */
  async touch(chat: string, ts: number, unread: boolean, preview?: string): Promise<void> {
    const meta = this.metas.get(chat) ?? { chat, lastTs: 0, unread: 0 };
    if (preview !== undefined && ts >= meta.lastTs) meta.preview = preview;
    meta.lastTs = Math.max(meta.lastTs, ts);
    if (unread) meta.unread += 1;
    this.metas.set(chat, meta);
    await this.save(meta);
  }

  /** The last message changed (edited or deleted): its line in the list follows. */
  async setPreview(chat: string, ts: number, preview: string): Promise<void> {
    const meta = this.metas.get(chat);
    if (!meta || ts < meta.lastTs) return;
    meta.preview = preview;
    await this.save(meta);
  }

  /** The last message disappeared: the line becomes the newest message still shown, or none. */
  async replacePreview(chat: string, preview: string | undefined): Promise<void> {
    const meta = this.metas.get(chat);
    if (!meta || meta.preview === preview) return;
    if (preview === undefined) delete meta.preview;
    else meta.preview = preview;
    await this.save(meta);
  }

  meta(chat: string): ChatMeta | undefined {
    return this.metas.get(chat);
  }

  /** Changes a chat's flags (left, gone, the remembered room name); saved sealed. */
  async flag(chat: string, flags: Pick<ChatMeta, 'left' | 'title' | 'gone'>): Promise<void> {
    const meta = this.metas.get(chat) ?? { chat, lastTs: 0, unread: 0 };
    const next = { ...meta, ...flags };
    for (const flag of ['left', 'gone'] as const) if (!next[flag]) delete next[flag];
    if (JSON.stringify(next) === JSON.stringify(meta) && this.metas.has(chat)) return;
    this.metas.set(chat, next);
    await this.save(next);
  }

  /** Clears the chat's unread count; false when it had none. */
  async markRead(chat: string): Promise<boolean> {
    const meta = this.metas.get(chat);
    if (!meta || meta.unread === 0) return false;
    meta.unread = 0;
    await this.save(meta);
    return true;
  }

  /** Sets the unread count (as the SDK counts it); false when it was that already. */
  async setUnread(chat: string, unread: number): Promise<boolean> {
    const meta = this.metas.get(chat);
    if (!meta || meta.unread === unread) return false;
    meta.unread = unread;
    await this.save(meta);
    return true;
  }

  /** Drops the chat's entry (its messages are dropped by the conversation store). */
  async forget(chat: string): Promise<void> {
    this.metas.delete(chat);
    await this.db.delete(STORES.chats, await this.tags.chatMeta(chat));
  }
}

function withPreview(meta: ChatMeta | undefined): { preview?: string } {
  return meta?.preview !== undefined ? { preview: meta.preview } : {};
}
