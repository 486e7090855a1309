/**
 * What every receiving client enforces, whatever the sender's client did:
 * - only a message's own sender (the envelope's authenticated `from`) can edit or delete it, and
 *   only in the chat it was sent to; a deleted message takes no further edits or reactions;
 * - a reaction or receipt from someone who is not in the chat is ignored;
 * - an edit, deletion, reaction or receipt that arrives before its target waits for it, within
 *   the bounds of waiting.ts;
 * - a sender has at most MAX_REACTIONS_PER_SENDER distinct reactions on one message, and a
 *   removal of a reaction that was never added changes nothing;
 * - a second copy of a message (same sender, same plaintext id) is dropped; one under a later
 *   envelope id (a retry its sender renewed) moves the record to that id, the only one the
 *   sender still knows, so later edits, reactions and receipts name the same message on both sides;
 * - a pin or unpin (message-pins.ts) or a timer change (disappearing.ts) from someone who is not in
 *   the chat is ignored; the latest by (sentAt, mid) holds, whatever order they came in;
 * - a message's own `expire` is the timer it counts down (from its sender's sending, or from when
 *   this account first saw it); a read receipt of this account's own, from another of its devices,
 *   marks the message read and seen here too;
 * - a type from a newer client is kept as a placeholder, and an envelope that does not open (or
 *   whose plaintext is malformed) as a decryption error, never as text.
 */
import { attachmentRecord } from '../attachments/record.js';
import type { DecryptedMessage } from '../envelopes.js';
import { applyTimer, timerText } from './disappearing.js';
import { applyPin, notePinned } from './message-pins.js';
import type { ChatMessage, PendingAction } from './model.js';
import { isAttachmentPlain, type Plain } from '../wire/plaintext.js';
import { keepWaiting, type WaitContext } from './waiting.js';

export const FAILURE_TEXT: Record<string, string> = {
  decrypt_failed: 'This message could not be decrypted: it was altered, forged, or sealed with a key this device does not have.',
  no_room_key: 'This message could not be decrypted: this device has no key for it.',
  unknown_sender: 'This message could not be decrypted: the sender’s account no longer exists.',
  untrusted_key: 'This message could not be decrypted: the sender’s key is not trusted.',
  malformed: 'This message could not be decrypted: it is not in a form this app knows.',
};

export const UNKNOWN_TEXT = 'This message needs a newer version of the app.';

/**
 * Distinct emoji one sender may have used on one message (its reaction changes are kept per
 * emoji). Times the 256 members a room may have, this is the 4,096 entries a record may carry
 * in an export or a transfer.
 */
export const MAX_REACTIONS_PER_SENDER = 16;

export type RuleContext = WaitContext;

/** What one envelope changed: a new record to show (and count as unread when from another), and records it changed. */
export interface Ingested {
  added?: ChatMessage;
  changed: ChatMessage[];
  /** Dropped on purpose (a duplicate, a refused action): for tests and logs. */
  ignored?: string;
  /** Ids of records that went away (a record moved to the id of a later copy, which is in `changed`). */
  removed?: string[];
}

/** Takes one decrypted envelope into the store, applying the rules above. */
export async function ingest(c: RuleContext, d: DecryptedMessage): Promise<Ingested> {
  if (await c.store.get(d.id)) return { changed: [], ignored: 'already stored' };
  if (!d.ok) {
    const m: ChatMessage = {
      id: d.id,
      chat: d.chat,
      ts: d.ts,
      from: d.from,
      sentAt: d.ts,
      kind: 'undecryptable',
      note: FAILURE_TEXT[d.reason] ?? FAILURE_TEXT.decrypt_failed!,
    };
    await c.store.put(m);
    return { added: m, changed: [] };
  }
  const p = d.plain;
  const first = p.mid !== undefined ? await c.store.idForMid(d.from, p.mid) : undefined;
  if (first !== undefined) return secondCopy(c, first, d.id);
  if (p.type === 'text' || p.type === 'unknown' || isAttachmentPlain(p)) {
    const m: ChatMessage = isAttachmentPlain(p)
      ? attachmentRecord(d, p)
      : p.type === 'text'
        ? {
            id: d.id,
            chat: d.chat,
            ts: d.ts,
            from: d.from,
            sentAt: p.sentAt,
            kind: 'text',
            body: p.body,
            ...(p.replyTo ? { replyTo: p.replyTo } : {}),
          }
        : { id: d.id, chat: d.chat, ts: d.ts, from: d.from, sentAt: p.sentAt, kind: 'unknown', note: UNKNOWN_TEXT };
    if (p.mid) m.mid = p.mid;
    if (d.from === c.me) m.state = 'sent';
    if (p.type !== 'unknown' && p.expire) {
      m.expire = p.expire;
      if (d.from === c.me) m.seenAt = p.sentAt;
    }
    const changed = await applyWaiting(c, m);
    await c.store.put(m);
    return { added: m, changed };
  }
  if (p.type === 'members') return { changed: [], ignored: 'members' };
  if (p.type === 'mute') return { changed: [], ignored: 'mute' };
  if (p.type === 'timer') {
    if (!c.isMember(d.chat, d.from)) return { changed: [], ignored: 'not a member' };
    const m: ChatMessage = {
      id: d.id,
      chat: d.chat,
      ts: d.ts,
      from: d.from,
      sentAt: p.sentAt,
      kind: 'event',
      event: { what: 'timer', nicks: [d.from], seconds: p.seconds },
      note: timerText(d.from, p.seconds),
      ...(p.mid ? { mid: p.mid } : {}),
    };
    await c.store.put(m);
    await applyTimer(c.store, d.chat, { seconds: p.seconds, by: d.from, sentAt: p.sentAt, ...(p.mid ? { mid: p.mid } : {}) });
    return { added: m, changed: [] };
  }
  return applyAction(c, { id: d.id, chat: d.chat, from: d.from, ts: d.ts, plain: p });
}

/**
 * A second copy of the record `firstId`, under envelope id `id`. Envelope ids sort by time, so a
 * later id is the sender's renewed retry: the record takes that id (stored before the old one goes,
 * so a crash in between loses nothing). An earlier or replayed copy only is dropped.
 */
async function secondCopy(c: RuleContext, firstId: string, id: string): Promise<Ingested> {
  const m = id > firstId ? await c.store.get(firstId) : undefined;
  if (!m) return { changed: [], ignored: 'second copy' };
  const moved: ChatMessage = { ...m, id };
  await applyWaiting(c, moved);
  await c.store.put(moved);
  await c.store.remove(firstId);
  return { changed: [moved], removed: [firstId], ignored: 'second copy' };
}

type Action = Omit<PendingAction, 'target' | 'at'>;

/** An edit, deletion, reaction or receipt: applied to its target(s), or kept until they arrive. */
export async function applyAction(c: RuleContext, a: Action): Promise<Ingested> {
  const p = a.plain;
  if ((p.type === 'reaction' || p.type === 'receipt' || p.type === 'pin') && !c.isMember(a.chat, a.from))
    return { changed: [], ignored: 'not a member' };
  if (p.type === 'pin') await notePinned(c.store, a.chat, [p.target]);
  const targets = p.type === 'receipt' ? [...new Set(p.ids)] : 'target' in p ? [p.target] : [];
  const changed: ChatMessage[] = [];
  let ignored: string | undefined;
  for (const target of targets) {
    const m = await c.store.get(target);
    if (!m) {
      const why = await keepWaiting(c, { ...a, id: targets.length > 1 ? `${a.id}#${target}` : a.id, target });
      if (why) ignored = why;
      continue;
    }
    const why = apply(c, m, a.from, a.chat, p);
    if (why) ignored = why;
    else {
      await c.store.put(m);
      changed.push(m);
    }
  }
  return ignored !== undefined ? { changed, ignored } : { changed };
}

/** Applies the actions that waited for `m` (it is being stored now, also by a history import); returns nothing new to show. */
export async function applyWaiting(c: RuleContext, m: ChatMessage): Promise<ChatMessage[]> {
  const waiting = await c.store.takePending(m.id);
  for (const w of waiting) apply(c, m, w.from, w.chat, w.plain);
  return [];
}

/**
 * Changes `m` in place for an action of `from` in `chat`; returns why it was refused, or
 * undefined when applied.
 */
function apply(c: RuleContext, m: ChatMessage, from: string, chat: string, p: Plain): string | undefined {
  if (m.chat !== chat) return 'target in another chat';
  switch (p.type) {
    case 'edit':
      if (m.from !== from) return 'edit by someone else';
      if (m.kind !== 'text' || m.deleted) return 'not an editable message';
      if ((m.editedAt ?? -1) > p.sentAt) return 'older edit';
      m.body = p.body;
      m.editedAt = p.sentAt;
      return undefined;
    case 'delete':
      if (m.from !== from) return 'delete by someone else';
      m.deleted = true;
      delete m.body;
      delete m.replyTo;
      delete m.reactions;
      delete m.reactedAt;
      delete m.attachment;
      return undefined;
    case 'reaction': {
      if (m.deleted || m.kind !== 'text') return 'not a reactable message';
      const key = `${from} ${p.emoji}`;
      const at = m.reactedAt?.[key];
      if (at === undefined) {
        if (p.op === 'remove') return 'removal of a reaction never added';
        const used = Object.keys(m.reactedAt ?? {}).filter((k) => k.startsWith(`${from} `)).length;
        if (used >= MAX_REACTIONS_PER_SENDER) return 'too many reactions';
      } else if (at > p.sentAt) return 'older reaction';
      const reactions = { ...(m.reactions ?? {}) };
      const who = new Set(reactions[p.emoji] ?? []);
      if (p.op === 'add') who.add(from);
      else who.delete(from);
      if (who.size > 0) reactions[p.emoji] = [...who].sort();
      else delete reactions[p.emoji];
      m.reactions = reactions;
      m.reactedAt = { ...(m.reactedAt ?? {}), [key]: p.sentAt };
      return undefined;
    }
    case 'pin':
      return applyPin(m, from, p);
    case 'receipt': {
      if (from === c.me && m.from !== c.me && p.status === 'read') {
        // Read on another of this account's devices: read here too, and seen then (its timer runs).
        const seen = m.expire !== undefined && (m.seenAt === undefined || m.seenAt > p.sentAt);
        if (m.reported === 'read' && !seen) return 'already reported';
        m.reported = 'read';
        if (seen) m.seenAt = p.sentAt;
        return undefined;
      }
      if (m.from !== c.me || from === c.me) return 'receipt for a message not mine';
      const field = p.status === 'read' ? 'read' : 'delivered';
      const set = new Set(m[field] ?? []);
      if (set.has(from)) return 'already reported';
      set.add(from);
      m[field] = [...set].sort();
      return undefined;
    }
    default:
      return 'not an action';
  }
}

/**
 * Applies one of this account's own actions at once (the sending device does not get its own
 * envelope back), with the same rules as a receiver.
 */
export async function applyOwn(c: RuleContext, id: string, chat: PendingAction['chat'], ts: number, plain: Plain): Promise<Ingested> {
  return applyAction(c, { id, chat, from: c.me, ts, plain });
}
