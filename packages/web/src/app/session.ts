/**
 * A signed-in account on this device: the SDK Messenger plus what this browser keeps for it
 * (history, pins, chat list) and the event stream. Views hold one Session and listen to it.
 */
import type { ConnectionState, Messenger } from '@svc/sdk';
import { ChatList, type ChatSummary } from './chats.js';
import { Emitter } from './emitter.js';
import type { Message } from './history.js';
import { History } from './history.js';
import { Db } from './idb.js';
import { Trust } from './trust.js';

export type EndReason = 'signed_out' | 'session_ended' | 'device_removed' | 'account_deleted';

export interface SessionEvents extends Record<string, unknown> {
  chats: ChatSummary[];
  message: Message;
  /** A stored message was replaced (a late retry gets a new id). */
  removed: string;
  conn: ConnectionState;
  trust: undefined;
  rooms: undefined;
  /** A chat went away (room deleted, left, or removed from it). */
  gone: string;
  ended: EndReason;
  /** Something failed in the background that the user should know about. */
  problem: string;
}

export class Session extends Emitter<SessionEvents> {
  readonly nick: string;
  readonly history: History;
  readonly trust: Trust;
  readonly chats: ChatList;
  conn: ConnectionState = 'connecting';
  /** The chat on screen, so arriving messages there do not count as unread. */
  openChat: string | null = null;

  constructor(
    readonly m: Messenger,
    readonly db: Db,
    readonly deviceId: string,
  ) {
    super();
    this.nick = m.nick;
    this.history = new History(db, m.historyKey);
    this.trust = new Trust(db, m.historyKey, { nick: m.nick, publicKey: m.publicKey });
    this.trust.onChange = () => {
      this.emit('trust', undefined);
      this.publishChats();
    };
    this.chats = new ChatList(m, this.history);
  }

  async load(): Promise<void> {
    await this.trust.load();
    await this.chats.load();
  }

  publishChats(): void {
    this.emit('chats', this.trust.annotate(this.chats.list()));
  }

  /** Whether a message in `chat` is being read right now. */
  isReading(chat: string): boolean {
    return this.openChat === chat && document.visibilityState === 'visible';
  }
}
