/**
 * The chat list model: one entry per DM peer (contacts and anyone who wrote) and per room this
 * account is in, ordered by last activity, with unread counts kept in the local history meta.
 */
import type { Contact } from '@svc/protocol';
import type { Messenger } from '@svc/sdk';
import type { ChatMeta, History } from './history.js';
import { splitChat } from './route.js';

export interface ChatSummary {
  chat: string;
  kind: 'dm' | 'room';
  /** The peer's nick or the room's name: the entry's accessible name. */
  title: string;
  lastTs: number;
  unread: number;
  /** DMs only, set by Trust.annotate: the peer's pinned key is marked verified. */
  verified?: boolean;
  /** DMs only, set by Trust.annotate: the peer's key changed and the change is not accepted yet. */
  keyChanged?: boolean;
}

export class ChatList {
  private contacts = new Map<string, Contact>();
  private metas = new Map<string, ChatMeta>();

  constructor(
    private readonly m: Messenger,
    private readonly history: History,
  ) {}

  async load(): Promise<void> {
    for (const meta of await this.history.metas()) this.metas.set(meta.chat, meta);
  }

  setContacts(list: Contact[]): void {
    this.contacts = new Map(list.map((c) => [c.nick, c]));
  }

  addContact(c: Contact): void {
    this.contacts.set(c.nick, c);
  }

  contact(nick: string): Contact | undefined {
    return this.contacts.get(nick);
  }

  list(): ChatSummary[] {
    const out = new Map<string, ChatSummary>();
    const metaOf = (chat: string) => this.metas.get(chat);
    for (const c of this.contacts.values()) {
      const chat = `dm:${c.nick}`;
      const meta = metaOf(chat);
      out.set(chat, { chat, kind: 'dm', title: c.nick, lastTs: Math.max(meta?.lastTs ?? 0, c.createdAt), unread: meta?.unread ?? 0 });
    }
    for (const meta of this.metas.values()) {
      const { kind, id } = splitChat(meta.chat);
      if (kind === 'dm' && !out.has(meta.chat)) out.set(meta.chat, { chat: meta.chat, kind, title: id, lastTs: meta.lastTs, unread: meta.unread });
    }
    for (const r of this.m.rooms) {
      const chat = `room:${r.id}`;
      const meta = metaOf(chat);
      out.set(chat, { chat, kind: 'room', title: r.name, lastTs: Math.max(meta?.lastTs ?? 0, r.createdAt), unread: meta?.unread ?? 0 });
    }
    return [...out.values()].sort((a, b) => b.lastTs - a.lastTs || a.title.localeCompare(b.title));
  }

  /** A message arrived or was sent: the chat moves up; `unread` counts one more when not being read. */
  async touch(chat: string, ts: number, unread: boolean): Promise<void> {
    const meta = this.metas.get(chat) ?? { chat, lastTs: 0, unread: 0 };
    meta.lastTs = Math.max(meta.lastTs, ts);
    if (unread) meta.unread += 1;
    this.metas.set(chat, meta);
    await this.history.putMeta(meta);
  }

  async markRead(chat: string): Promise<void> {
    const meta = this.metas.get(chat);
    if (!meta || meta.unread === 0) return;
    meta.unread = 0;
    await this.history.putMeta(meta);
  }

  async forget(chat: string): Promise<void> {
    this.metas.delete(chat);
    await this.history.forget(chat);
  }
}
