/**
 * Each listed chat's mute as the SDK keeps it (synced to the account's other devices), read once
 * per chat and again when it changes, and which muted chats hold an unread message that mentions
 * this account: those still count in the title and show "Muted" with the mention. The Session
 * owns one, emits what changed and keeps the timer of the mute that ends first.
 */
import { isMuted, type ChatId, type Conversations, type MuteSetting } from '@svc/sdk';

export class ChatMutes {
  /** Each chat's mute as last read; null while it is being read, or when it has none. */
  private readonly settings = new Map<string, MuteSetting | null>();
  private readonly mentioned = new Set<string>();

  constructor(
    private readonly conv: Conversations,
    /** The service's clock (ms), in which a mute's end is set. */
    private readonly now: () => number,
  ) {}

  /** Whether `chat` is muted now ("Unmute" in its header, "Muted" in the list). */
  isMuted(chat: string): boolean {
    return isMuted(this.settings.get(chat), this.now());
  }

  /** The list's mark of a muted chat ("Muted", and whether an unread message mentions this account), or undefined. */
  mark(chat: string): { mentioned: boolean } | undefined {
    return this.isMuted(chat) ? { mentioned: this.mentioned.has(chat) } : undefined;
  }

  /** Reads the chat's mute, and whether it holds an unread mention of this account. */
  async read(chat: ChatId): Promise<void> {
    const mute = await this.conv.mute(chat);
    this.settings.set(chat, mute);
    if (isMuted(mute, this.now()) && (await this.conv.unread(chat)).mentioned) this.mentioned.add(chat);
    else this.mentioned.delete(chat);
  }

  /** Of `chats`, those listed for the first time (contacts and rooms arrive once online): the caller reads their mutes. */
  firstSeen(chats: string[]): ChatId[] {
    const unknown = chats.filter((chat) => !this.settings.has(chat)) as ChatId[];
    for (const chat of unknown) this.settings.set(chat, null);
    return unknown;
  }

  /** A message that mentions this account arrived in `chat`: it counts if the chat is muted. */
  mentionArrived(chat: string): void {
    if (this.isMuted(chat)) this.mentioned.add(chat);
  }

  /** `chat` was read; true when an unread mention of it counted. */
  mentionRead(chat: string): boolean {
    return this.mentioned.delete(chat);
  }

  /** When the first mute that has an end ends (ms, the service's clock), or null. */
  nextEnd(): number | null {
    const now = this.now();
    let next = Infinity;
    for (const mute of this.settings.values()) if (mute && mute.until !== 'always' && mute.until > now) next = Math.min(next, mute.until);
    return next === Infinity ? null : next;
  }
}
