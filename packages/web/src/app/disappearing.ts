/**
 * Disappearing messages on this device: one timer for the message that disappears next, and what
 * the app keeps of a message that ran out (its kept file, notifications, and the chat list's
 * last-message line). The SDK cuts the records themselves, and their search entries with them. The Session owns one and
 * shows the chat list again when a line changed.
 */
import { isShown, type Change, type Conversations } from '@svc/sdk';
import type { AttachmentBytes } from './attachment-bytes.js';
import { previewOf, type ChatList } from './chats.js';
import type { IdbConversationStore } from './conversation-store.js';
import type { KeptFiles } from './keptfiles.js';
import { closeNotifications } from './notify.js';
import { MAX_TIMER_MS } from './timers.js';

/** What a message that ran out leaves behind, and the clock its deadline is counted in. */
export interface DisappearingParts {
  nick: string;
  conv: Conversations;
  store: IdbConversationStore;
  chats: ChatList;
  files: KeptFiles;
  attachments: AttachmentBytes;
  /** The service's clock (ms). */
  now: () => number;
}

export class DisappearingMessages {
  private timer: ReturnType<typeof setTimeout> | null = null;
  /** When the timer fires (ms, the service's clock). */
  private timerAt: number | null = null;
  private stopped = false;

  constructor(
    private readonly parts: DisappearingParts,
    /** Called when a chat's last-message line changed. */
    private readonly listChanged: () => void,
  ) {}

  /** The records changed: a message with a timer that was sent or seen may be the next to disappear. */
  follow(change: Change): void {
    const touched = [...change.changed, ...(change.added ? [change.added] : []), ...(change.imported ?? [])];
    if (touched.some((m) => m.expire && m.seenAt !== undefined && !m.expired)) void this.schedule();
  }

  /** Sets the one timer for the message that disappears next; called whenever a deadline may have changed. */
  async schedule(): Promise<void> {
    const next = await this.parts.conv.nextExpiry();
    if (this.stopped) return;
    if (next?.at === this.timerAt && this.timer) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.timerAt = next?.at ?? null;
    if (!next) return;
    const wait = Math.max(0, Math.min(next.at - this.parts.now(), MAX_TIMER_MS));
    this.timer = setTimeout(() => {
      this.timer = null;
      this.timerAt = null;
      void this.expireNow()
        .catch((e: unknown) => console.warn('disappearing messages:', e))
        .then(() => this.schedule());
    }, wait);
  }

  /**
   * Cuts every message whose timer ran out (the SDK makes their records tombstones and tells the
   * views), then drops what the app keeps of them; returns how many went.
   */
  async expireNow(): Promise<number> {
    const { conv, attachments, files, store, chats, nick } = this.parts;
    const { records, attachments: gone } = await conv.expireDue();
    for (const id of gone) {
      attachments.forget(id);
      await files.remove(id).catch((e: unknown) => console.warn('removing a kept file:', e));
    }
    const touched = new Set(records.map((m) => m.chat));
    for (const chat of touched) {
      closeNotifications(chat);
      const last = (await store.chat(chat, { limit: 50 })).filter(isShown).at(-1);
      await chats.replacePreview(chat, last ? previewOf(last, nick) : undefined);
    }
    if (touched.size > 0) this.listChanged();
    return records.length;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }
}
