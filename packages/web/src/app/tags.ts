/**
 * Every name the app stores a row under, as a tag of the account's index key (docs/CRYPTO.md,
 * "History at rest"): HMAC-SHA256 of a context that says what is named, so two kinds of name never
 * share a tag, and the same chat or id always gives the same tag on this account. A chat's tag is
 * asked for on every page and every message, so those are kept in memory.
 */
import { atRestTag } from '@svc/sdk';

export class Tags {
  private readonly chats = new Map<string, Promise<string>>();

  constructor(private readonly key: CryptoKey) {}

  of(context: string): Promise<string> {
    return atRestTag(this.key, context);
  }

  /** The `c` of a chat's message rows (index chat_order). */
  chat(chat: string): Promise<string> {
    let tag = this.chats.get(chat);
    if (!tag) {
      tag = this.of(`chat|${chat}`);
      this.chats.set(chat, tag);
    }
    return tag;
  }

  /** The key of a chat's row in the chat list (chats.ts). */
  chatMeta(chat: string): Promise<string> {
    return this.of(`chatmeta|${chat}`);
  }

  message(id: string): Promise<string> {
    return this.of(`msg|${id}`);
  }

  /** The duplicate check's key: the plaintext's random id from this sender. */
  mid(from: string, mid: string): Promise<string> {
    return this.of(`mid|${from}|${mid}`);
  }

  pending(id: string): Promise<string> {
    return this.of(`pending|${id}`);
  }

  /** The message a waiting action is for (index target). */
  target(id: string): Promise<string> {
    return this.of(`target|${id}`);
  }

  /** The sender of a waiting action (index sender: the per-sender budget). */
  sender(nick: string): Promise<string> {
    return this.of(`sender|${nick}`);
  }

  /** The sender and chat of a waiting action (index sender_chat: the cap per sender and chat). */
  senderChat(nick: string, chat: string): Promise<string> {
    return this.of(`senderchat|${nick}|${chat}`);
  }

  outbox(id: string): Promise<string> {
    return this.of(`outbox|${id}`);
  }

  pin(nick: string): Promise<string> {
    return this.of(`pin|${nick}`);
  }

  /** A named value of the conversation layer (the transfer's state) in `kv`. */
  meta(key: string): Promise<string> {
    return this.of(`meta|${key}`);
  }
}
