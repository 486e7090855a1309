/**
 * Merging history from another device (a transfer chunk or an export file) into a
 * ConversationStore without duplicates and without going back in time:
 * - a record is matched by its envelope id; a record whose plaintext id (same sender) is already
 *   stored under another id is the same message retried, and is skipped;
 * - a deletion wins on both sides: a record deleted here stays deleted, one deleted there is
 *   deleted here;
 * - the text with the later edit wins; each person's reaction with the later change wins;
 *   delivery and read receipts add up; a record this device could not open is replaced by the
 *   other device's readable one;
 * - a pin or unpin with the later (sentAt, mid) wins; a message was first seen at the earlier of
 *   the two times; a record whose disappearing timer ran out is not taken at all;
 * - this device's own bookkeeping (send state, acceptance time) stays.
 * Merging the same records twice changes nothing the second time.
 */
import { applyTimer, isExpired, trackExpiry } from './disappearing.js';
import { notePinned } from './message-pins.js';
import { isLater } from './meta-lock.js';
import type { ChatMessage } from './model.js';
import { applyWaiting } from './rules.js';
import type { ConversationStore } from './store.js';

export interface MergeResult {
  /** Records that were new here. */
  added: ChatMessage[];
  /** Records that were here and changed. */
  changed: ChatMessage[];
  /** Records that were here already as they stand (or the same message under another id). */
  same: number;
}

const RANK = { undefined: 0, delivered: 1, read: 2 } as const;

function union(a: string[] | undefined, b: string[] | undefined): string[] | undefined {
  if (!a && !b) return undefined;
  return [...new Set([...(a ?? []), ...(b ?? [])])].sort();
}

/** What `local` becomes with what `other` knows about the same message (neither is changed). */
export function mergeRecord(local: ChatMessage, other: ChatMessage): ChatMessage {
  const m: ChatMessage = structuredClone(local);
  // An expired message stays cut, whatever another device still holds of it.
  if (m.expired) return m;
  if ((m.kind === 'undecryptable' || m.kind === 'unknown') && other.kind !== 'undecryptable' && other.kind !== 'unknown') {
    const { id: _id, ts: _ts, state: _state, delivered: _d, read: _r, reported: _rep, ...content } = structuredClone(other);
    delete m.note;
    Object.assign(m, content);
  }
  if (!m.deleted && other.deleted) {
    m.deleted = true;
    delete m.body;
    delete m.replyTo;
    delete m.reactions;
    delete m.reactedAt;
  }
  if (!m.deleted && m.kind === 'text' && other.kind === 'text' && !other.deleted) {
    if ((other.editedAt ?? -1) > (m.editedAt ?? -1) && other.body !== undefined) {
      m.body = other.body;
      m.editedAt = other.editedAt!;
    }
    mergeReactions(m, other);
  }
  const delivered = union(m.delivered, other.delivered);
  const read = union(m.read, other.read);
  if (delivered) m.delivered = delivered;
  if (read) m.read = read;
  if (RANK[`${other.reported}`] > RANK[`${m.reported}`]) m.reported = other.reported!;
  if (!m.deleted && other.pin && (!m.pin || isLater(other.pin, m.pin))) m.pin = { ...other.pin };
  if (m.expire === undefined && other.expire !== undefined) m.expire = other.expire;
  if (other.seenAt !== undefined && (m.seenAt === undefined || other.seenAt < m.seenAt)) m.seenAt = other.seenAt;
  return m;
}

/** Per `nick emoji`: the side whose change came later decides whether the reaction is there. */
function mergeReactions(m: ChatMessage, other: ChatMessage): void {
  const keys = new Set([...Object.keys(m.reactedAt ?? {}), ...Object.keys(other.reactedAt ?? {})]);
  if (keys.size === 0) return;
  const has = (r: ChatMessage, nick: string, emoji: string) => (r.reactions?.[emoji] ?? []).includes(nick);
  const reactions: Record<string, Set<string>> = {};
  for (const [emoji, who] of Object.entries(m.reactions ?? {})) reactions[emoji] = new Set(who);
  const reactedAt = { ...(m.reactedAt ?? {}) };
  for (const key of keys) {
    const mine = m.reactedAt?.[key] ?? -1;
    const theirs = other.reactedAt?.[key] ?? -1;
    if (theirs <= mine) continue;
    const sp = key.indexOf(' ');
    const [nick, emoji] = [key.slice(0, sp), key.slice(sp + 1)];
    const who = (reactions[emoji] ??= new Set());
    if (has(other, nick, emoji)) who.add(nick);
    else who.delete(nick);
    reactedAt[key] = theirs;
  }
  const out = Object.fromEntries(
    Object.entries(reactions)
      .filter(([, who]) => who.size > 0)
      .map(([e, who]) => [e, [...who].sort()]),
  );
  if (m.reactions || Object.keys(out).length > 0) m.reactions = out;
  m.reactedAt = reactedAt;
}

/** Merges `records` (already checked by history-codec.ts) into `store`; `me` is this account. */
export async function mergeRecords(store: ConversationStore, me: string, records: readonly ChatMessage[], now = Date.now()): Promise<MergeResult> {
  const r: MergeResult = { added: [], changed: [], same: 0 };
  const rules = { store, me, isMember: () => true };
  for (const rec of records) {
    if (isExpired(rec, now)) continue;
    const local = await store.get(rec.id);
    if (!local) {
      if (rec.mid !== undefined && (await store.idForMid(rec.from, rec.mid)) !== undefined) {
        r.same++;
        continue;
      }
      const m = structuredClone(rec);
      // An edit or reaction that reached this device before its message applies now.
      await applyWaiting(rules, m);
      await store.put(m);
      r.added.push(m);
      continue;
    }
    const m = mergeRecord(local, rec);
    if (JSON.stringify(m) === JSON.stringify(local)) {
      r.same++;
      continue;
    }
    await store.put(m);
    r.changed.push(m);
  }
  await afterMerge(store, [...r.added, ...r.changed]);
  return r;
}

/** What merged records change beyond themselves: a chat's timer, its pin list, the expiry index. */
async function afterMerge(store: ConversationStore, records: readonly ChatMessage[]): Promise<void> {
  const pins = new Map<string, string[]>();
  for (const m of records) {
    const ev = m.event;
    if (ev?.what === 'timer' && ev.seconds !== undefined)
      await applyTimer(store, m.chat, { seconds: ev.seconds, by: ev.nicks[0] ?? m.from, sentAt: m.sentAt, ...(m.mid ? { mid: m.mid } : {}) });
    if (m.pin) pins.set(m.chat, [...(pins.get(m.chat) ?? []), m.id]);
  }
  for (const [chat, ids] of pins) await notePinned(store, chat as ChatMessage['chat'], ids);
  await trackExpiry(store, records);
}
