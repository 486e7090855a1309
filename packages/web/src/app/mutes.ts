/**
 * Each listed chat's mute as the SDK keeps it (synced to the account's other devices), read once
 * per chat and again when it changes, and which muted chats hold an unread message that mentions
 * this account: those still count in the title and show "Muted" with the mention; and one timer
 * for the mute that ends first. The Session owns one and emits what changed.
 */
import { isMuted, type ChatId, type Conversations, type MuteSetting } from '@svc/sdk';
import { MAX_TIMER_MS } from './timers.js';

export class ChatMutes {
  /** Each chat's mute as last read; null while it is being read, or when it has none. */
  private readonly settings = new Map<string, MuteSetting | null>();
  private readonly mentioned = new Set<string>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private stopped = false;

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

  /** Reads the mutes of chats listed for the first time (contacts and rooms arrive once online); true when one of them is muted. */
  async readFirstSeen(chats: string[]): Promise<boolean> {
    const unknown = chats.filter((chat) => !this.settings.has(chat)) as ChatId[];
    if (unknown.length === 0) return false;
    for (const chat of unknown) this.settings.set(chat, null);
    await Promise.all(unknown.map((chat) => this.read(chat)));
    return unknown.some((chat) => this.isMuted(chat));
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

  /** One timer for the mute that ends first: `ended` runs when it does, so "Muted" goes from the list. */
  armTimer(ended: () => void): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const next = this.nextEnd();
    if (next === null || this.stopped) return;
    this.timer = setTimeout(
      () => {
        this.armTimer(ended);
        ended();
      },
      Math.min(next - this.now() + 50, MAX_TIMER_MS),
    );
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }
}
