/**
 * Conversations: the runtime-neutral layer a messenger app is built on. It takes envelopes in
 * (decrypt, then the rules of rules.ts, into a ConversationStore), sends what the person does
 * (texts and replies, reactions, edits, deletions) through the outbox, and reports delivery and
 * reading back with batched receipts; and the everyday state around them: pins, the disappearing
 * messages timer and expiry, mutes, mentions, unread counts and drafts. The web app plugs in
 * IndexedDB; a Node program the MemoryStore. Views listen with on() and re-render only the records
 * that changed.
 *
 * This file holds what the person does and sees; conversations-core.ts holds the parts wired
 * together, loading and stopping, and what changes the records without the person acting.
 */
import type { SendFileInput } from '../attachments/sender.js';
import { SdkError } from '../errors.js';
import type { ChatId } from '../envelopes.js';
import { deliveryStatus, type ChatMessage, type DeliveryStatus, type MembershipEvent } from './model.js';
import { quotedRecord } from './quote.js';
import { isMuted, moveReadMarker, shouldNotify, unreadOf, unreadSince, type MuteSetting, type Unread, type UnreadSince } from './chat-state.js';
import { chatTimer, isTimerSeconds, timerText, trackExpiry, type TimerSetting } from './disappearing.js';
import { stampAfter } from './meta-lock.js';
import { mentionsMe } from './mentions.js';
import { isPinnable, pinnedMessages, pinStamp } from './message-pins.js';
import { isAttachmentPlain, type PlainInput } from '../wire/plaintext.js';
import { applyOwn, ingest } from './rules.js';
import { byTime } from './store.js';
import { ConversationsCore, newMid } from './conversations-core.js';

export type { Change, HistoryMessage } from './changes.js';
export { newMid, type ConversationsOptions } from './conversations-core.js';

/** An edit is offered for this long after sending, as people expect. */
export const EDIT_WINDOW_MS = 24 * 60 * 60_000;

export class Conversations extends ConversationsCore {
  /** The message a reply in `chat` quotes, only from that chat (quote.ts): undefined when missing or of another chat. */
  quoted(chat: ChatId, id: string): Promise<ChatMessage | undefined> {
    return quotedRecord(this.store, chat, id);
  }

  // ---- what the person does ----

  /** Queues a text (a reply when `replyTo` names a message of the chat); it shows at once as "Sending". */
  async sendText(chat: ChatId, body: string, o: { replyTo?: string } = {}): Promise<ChatMessage> {
    if (body.trim() === '') throw new SdkError('invalid', { message: 'An empty message is not sent.' });
    const now = this.m.api.now();
    const { seconds } = await chatTimer(this.store, chat);
    const expire = seconds > 0 ? { expire: seconds } : {};
    const plain: PlainInput = { type: 'text', body, ...(o.replyTo ? { replyTo: o.replyTo } : {}), ...expire, sentAt: now, mid: newMid() };
    const msg: ChatMessage = {
      id: this.m.api.newId(),
      chat,
      ts: now,
      from: this.me,
      sentAt: now,
      mid: plain.mid!,
      kind: 'text',
      body,
      state: 'queued',
      ...(o.replyTo ? { replyTo: o.replyTo } : {}),
      ...(seconds > 0 ? { expire: seconds, seenAt: now } : {}),
    };
    // Stored before it is queued, so the outbox always finds the record it reports on.
    await this.store.put(msg);
    await this.drafts.clear(chat);
    await trackExpiry(this.store, [msg]);
    this.emit({ added: msg, changed: [] });
    await this.outbox.add(chat, plain, { id: msg.id });
    return msg;
  }

  /**
   * Queues a file, a photo (`photo`) or a voice message (`voice`), with the caption as its text; it
   * shows at once as "Sending" and goes once its upload finished (attachments/sender.ts). Refused
   * before anything is sent when over the service's limit: SdkError `file_too_large`, whose message
   * is "<name> is too large (limit 25 MB)".
   */
  async sendFile(chat: ChatId, input: SendFileInput): Promise<ChatMessage> {
    const now = this.m.api.now();
    const { seconds } = await chatTimer(this.store, chat);
    const m = await this.attachments.send(chat, input, { id: this.m.api.newId(), now, ...(seconds > 0 ? { expire: seconds } : {}) });
    await trackExpiry(this.store, [m]);
    return m;
  }

  /**
   * A line of the chat's own log that no envelope carried ("carol joined", "You were removed from
   * …"): stored like a message, never counted as unread, never sent.
   */
  async note(chat: ChatId, event: MembershipEvent, text: string): Promise<ChatMessage> {
    const now = this.m.api.now();
    // A record like any other (an id of its own, this account as its author), so that export and
    // device transfer carry it and do not count it as damaged.
    const m: ChatMessage = { id: this.m.api.newId(), chat, ts: now, from: this.me, sentAt: now, kind: 'event', event, note: text };
    await this.store.put(m);
    this.emit({ added: m, changed: [] });
    return m;
  }

  /** Whether this account may edit `m` now (its own text, not deleted, within 24 hours). */
  canEdit(m: ChatMessage): boolean {
    return m.from === this.me && m.kind === 'text' && !m.deleted && this.m.api.now() - m.sentAt < EDIT_WINDOW_MS;
  }

  canDelete(m: ChatMessage): boolean {
    return m.from === this.me && m.kind === 'text' && !m.deleted;
  }

  async edit(m: ChatMessage, body: string): Promise<void> {
    if (!this.canEdit(m)) throw new SdkError('invalid', { message: 'Only your own messages can be edited, within 24 hours.' });
    if (body.trim() === '' || body === m.body) return;
    // A queued file's caption is its text.
    if (await this.rewriteQueued(m.id, (p) => (p.type === 'text' ? { ...p, body } : isAttachmentPlain(p) ? { ...p, caption: body } : p))) {
      const cur = await this.store.get(m.id);
      if (cur) await this.store.put({ ...cur, body });
      return this.emit({ changed: [{ ...(cur ?? m), body }] });
    }
    await this.act(m.chat, { type: 'edit', target: m.id, body, sentAt: this.m.api.now(), mid: newMid() });
  }

  async deleteForEveryone(m: ChatMessage): Promise<void> {
    if (!this.canDelete(m)) throw new SdkError('invalid', { message: 'Only your own messages can be deleted for everyone.' });
    if (this.outbox.pending.some((i) => i.id === m.id)) {
      // Not sent yet: it never leaves this device.
      await this.outbox.drop(m.id);
      if (m.attachment) await this.attachments.cancel(m.attachment.id);
      const gone: ChatMessage = { ...m, deleted: true, state: 'sent' };
      delete gone.body;
      await this.store.put(gone);
      await this.store.settle?.();
      return this.emit({ changed: [gone] });
    }
    await this.act(m.chat, { type: 'delete', target: m.id, sentAt: this.m.api.now(), mid: newMid() });
    if (m.attachment) await this.attachments.remove(m.attachment.id);
  }

  /** Adds this account's reaction `emoji` to `m`, or removes it if it is there. */
  async react(m: ChatMessage, emoji: string): Promise<void> {
    const mine = (m.reactions?.[emoji] ?? []).includes(this.me);
    await this.act(m.chat, { type: 'reaction', target: m.id, emoji, op: mine ? 'remove' : 'add', sentAt: this.m.api.now(), mid: newMid() });
  }

  /**
   * Reports the chat's messages from others as read (batched; call while the chat is on screen).
   * `among`: the records the caller has on screen, so the store is not read again for each message.
   */
  async markRead(chat: ChatId, among?: ChatMessage[]): Promise<void> {
    const candidates = among ?? (await this.store.chat(chat, { limit: 500 }));
    await this.markSeen(chat, candidates);
    const newest = candidates.filter((x) => x.chat === chat).reduce<ChatMessage | null>((a, x) => (!a || byTime(x, a) > 0 ? x : a), null);
    if (newest) await moveReadMarker(this.store, chat, newest);
    if (!this.receipts) return;
    const unread = candidates.filter((x) => x.chat === chat && x.from !== this.me && x.kind === 'text' && !x.deleted && x.reported !== 'read');
    if (unread.length === 0) return;
    for (const x of unread) {
      x.reported = 'read';
      const cur = await this.store.get(x.id);
      if (cur) await this.store.put({ ...cur, reported: 'read' });
    }
    this.outbox.receipt(
      chat,
      unread.map((x) => x.id),
      'read',
    );
  }

  /**
   * The person pressed Retry on "Not sent". A record that is not in the outbox (written by an
   * older version of the app, or a crash between the two writes) goes into it again.
   */
  async retry(id: string): Promise<void> {
    if (this.outbox.pending.some((i) => i.id === id)) {
      await this.outbox.retry(id);
      return this.attachments.kick();
    }
    const m = await this.store.get(id);
    if (!m || m.from !== this.me || m.kind !== 'text' || m.state !== 'failed' || m.body === undefined || m.attachment) return;
    const plain: PlainInput = { type: 'text', body: m.body, sentAt: m.sentAt, mid: m.mid ?? newMid(), ...(m.replyTo ? { replyTo: m.replyTo } : {}) };
    const next: ChatMessage = { ...m, state: 'queued', mid: plain.mid! };
    delete next.note;
    await this.store.put(next);
    this.emit({ changed: [next] });
    await this.outbox.add(m.chat, plain, { id: m.id });
  }

  // ---- pins (message-pins.ts) ----

  /** Whether `m` can be pinned or unpinned (any member, any message a person sent that is settled and not deleted). */
  canPin(m: ChatMessage): boolean {
    return isPinnable(m);
  }

  /** Pins `m` in its chat for every member ("Pin"). */
  pin(m: ChatMessage): Promise<void> {
    return this.pinOp(m, 'pin');
  }

  /** Unpins `m` for every member ("Unpin"). */
  unpin(m: ChatMessage): Promise<void> {
    return this.pinOp(m, 'unpin');
  }

  private async pinOp(m: ChatMessage, op: 'pin' | 'unpin'): Promise<void> {
    if (!isPinnable(m)) throw new SdkError('invalid', { message: 'Only a sent message that is not deleted can be pinned.' });
    await this.act(m.chat, { type: 'pin', target: m.id, op, sentAt: await pinStamp(this.store, m.chat, this.m.api.now()), mid: newMid() });
  }

  /** The chat's pinned messages as they stand now, the most recently pinned first (the region "Pinned messages"). */
  pinned(chat: ChatId): Promise<ChatMessage[]> {
    return pinnedMessages(this.store, chat);
  }

  // ---- disappearing messages (disappearing.ts) ----

  /** The chat's disappearing messages timer (`seconds` 0 = off). */
  timer(chat: ChatId): Promise<TimerSetting> {
    return chatTimer(this.store, chat);
  }

  /**
   * Sets the chat's timer for every member (`seconds` one of TIMER_CHOICES, 0 turns it off): the
   * log line shows at once, messages sent from now on carry it. SdkError `invalid` for another value.
   */
  async setTimer(chat: ChatId, seconds: number): Promise<ChatMessage | null> {
    if (!isTimerSeconds(seconds)) throw new SdkError('invalid', { message: 'Not a disappearing messages choice.' });
    const held = await chatTimer(this.store, chat);
    if (held.seconds === seconds) return null;
    // Stamped after the change this device holds, so a clock that runs behind the other member's
    // cannot make a change made after seeing theirs lose to it (meta-lock.ts, stampAfter).
    const now = stampAfter(this.m.api.now(), held.sentAt > 0 ? held.sentAt : undefined);
    const plain: PlainInput = { type: 'timer', seconds, sentAt: now, mid: newMid() };
    const r = await ingest(this.rules, {
      ok: true,
      id: this.m.api.newId(),
      ts: now,
      from: this.me,
      chat,
      sentAt: now,
      plain: { v: 1, ...plain } as never,
    });
    const line = r.added!;
    this.emit({ added: line, changed: [] });
    await this.outbox.add(chat, plain, { id: line.id });
    return line;
  }

  /** The log line of a timer change (also for callers that build their own records). */
  timerText(nick: string, seconds: number): string {
    return timerText(nick, seconds);
  }

  /**
   * The person has `among` on screen (records of `chat`): the clock of each message with a timer
   * starts now, if it had not. markRead does this too.
   */
  async markSeen(chat: ChatId, among: ChatMessage[]): Promise<void> {
    const now = this.m.api.now();
    const seen: ChatMessage[] = [];
    for (const x of among) {
      if (x.chat !== chat || !x.expire || x.seenAt !== undefined || x.expired) continue;
      const cur = await this.store.get(x.id);
      if (!cur || cur.seenAt !== undefined || !cur.expire) continue;
      x.seenAt = now;
      const next = { ...cur, seenAt: now };
      await this.store.put(next);
      seen.push(next);
    }
    if (seen.length === 0) return;
    await trackExpiry(this.store, seen);
    this.emit({ changed: seen });
  }

  // ---- mute, unread, mentions ----

  /** The chat's mute, if any (whether it holds now: `muted`). */
  mute(chat: ChatId): Promise<MuteSetting | null> {
    return this.mutes.get(chat);
  }

  /** Whether the chat is muted now ("Muted" in the chat list, "Unmute" in its header). */
  async muted(chat: ChatId): Promise<boolean> {
    return isMuted(await this.mutes.get(chat), this.m.api.now());
  }

  /** Mutes `chat` until `until` (ms) or "always", or unmutes it (0); the account's other devices follow. */
  setMute(chat: ChatId, until: number | 'always'): Promise<MuteSetting> {
    return this.mutes.set(chat, until);
  }

  /** Whether `m` raises a notification here: not when its chat is muted, unless it mentions this account. */
  async shouldNotify(m: ChatMessage): Promise<boolean> {
    return shouldNotify(m, { mute: await this.mutes.get(m.chat) }, this.me, this.m.api.now());
  }

  /** Whether `m` mentions this account (highlighted; notifies in a muted chat). */
  mentionsMe(m: ChatMessage): boolean {
    return mentionsMe(m, this.me);
  }

  /** The chat's unread messages: count, the first one's id (the "New messages" separator), and whether one mentions this account. */
  unread(chat: ChatId): Promise<Unread> {
    return unreadOf(this.store, chat, this.me);
  }

  /** The same, with the records after the read marker it was counted from: what the chat opens on, read once. */
  unreadSince(chat: ChatId): Promise<UnreadSince> {
    return unreadSince(this.store, chat, this.me);
  }

  /** The status one's own message shows ("Sending", "Not sent", "Sent", "Delivered", "Read"). */
  status(m: ChatMessage): DeliveryStatus {
    return deliveryStatus(
      m,
      this.members(m.chat).filter((n) => n !== this.me),
    );
  }

  /** For a message waiting in the outbox: milliseconds until it is expected to go, else null. */
  waitMs(id: string): number | null {
    return this.outbox.waitMs(id);
  }

  /** An action of this account: applied here at once, then sent. */
  private async act(chat: ChatId, plain: PlainInput): Promise<void> {
    const id = this.m.api.newId();
    const r = await applyOwn(this.rules, id, chat, this.m.api.now(), { v: 1, ...plain } as never);
    if (r.changed.some((m) => m.deleted)) await this.store.settle?.();
    this.emit({ changed: r.changed });
    await this.outbox.add(chat, plain, { id });
  }

  /** Changes the plaintext of a message still in the outbox; false when it has gone already. */
  private async rewriteQueued(id: string, f: (p: PlainInput) => PlainInput): Promise<boolean> {
    const item = this.outbox.pending.find((i) => i.id === id);
    if (!item) return false;
    item.plain = f(item.plain);
    await this.store.outboxPut(item);
    return true;
  }
}
