/**
 * The send rules of docs/API.md, each written once: which refusal a send meets and in what
 * order, how a used id is answered, who the targets are and in what order, which contact rows a
 * first DM adds, and how much a full queue gives up. They are pure decisions over facts: the
 * domain applies them before the rate limit (step 5), and each store applies them again inside
 * its send transaction, on facts it read under its locks, and only stores what they decided. So
 * the SQLite and PostgreSQL stores cannot disagree on a refusal (test/store/suite.ts runs every
 * one against both).
 *
 * It imports only the protocol and the store's types: the domain and both stores depend on it, it
 * on neither.
 */
import { LIMITS, type Target } from '@svc/protocol';
import type { Refusal, SendInput, SendResult, SendTarget, TargetFacts } from '../store/types.js';

export type SendRefusal = Refusal<'not_member' | 'unknown_key' | 'unknown_user' | 'self'>;

/** An envelope already stored under the id a send asks for. */
export interface PriorSend {
  sender: string;
  ts: number;
}

/** Message step 5: room sends check membership, then the key; DMs check the recipient's account, then self. */
export function sendRefusal(from: string, to: Target, facts: TargetFacts): SendRefusal | null {
  if ('room' in to) {
    if (!facts.room) throw new Error('room facts expected for a room send');
    if (!facts.senderIsMember) return { error: 'not_member' };
    if (!facts.keyIsKnown) return { error: 'unknown_key' };
    return null;
  }
  if (facts.room) throw new Error('DM facts expected for a DM send');
  if (!facts.recipientIsLive) return { error: 'unknown_user' };
  if (to.dm === from) return { error: 'self' };
  return null;
}

/**
 * The decision inside the send transaction. A used id is answered first: its sender gets the
 * original `{id, ts}` and nothing is queued twice; anyone else gets `id_conflict`. Then the rights
 * of step 5 again, since they may have changed since the domain checked them; so a retry stays a
 * retry when its sender left the room between that check and this transaction (a retry whose
 * sender had already left is refused by the check itself, as a new send would be: docs/API.md).
 * `null`: store and queue the envelope.
 */
export function decideSend(m: SendInput, prior: PriorSend | null, facts: TargetFacts): Exclude<SendResult, { status: 'queued' }> | null {
  if (prior) return prior.sender === m.from ? { status: 'retry', id: m.id, ts: prior.ts } : { error: 'id_conflict' };
  return sendRefusal(m.from, m.to, facts);
}

/** A device that may receive a send, as the store read it. */
export interface CandidateDevice extends SendTarget {
  /** The device's creation order among all devices. */
  seq: number;
}

/**
 * A DM's targets (step 7): every device of the recipient and every other device of the sender,
 * in device creation order. Both lists come in that order; the sending device is never a target.
 */
export function dmTargets<D extends CandidateDevice>(recipient: readonly D[], sender: readonly D[], senderDevice: string): D[] {
  const out: D[] = [];
  let i = 0;
  let j = 0;
  while (i < recipient.length || j < sender.length) {
    const r = recipient[i];
    const s = sender[j];
    if (s !== undefined && (r === undefined || s.seq < r.seq)) {
      if (s.deviceId !== senderDevice) out.push(s);
      j++;
    } else {
      out.push(r!);
      i++;
    }
  }
  return out;
}

/** A member's device, with the member's join order in the room. */
export interface MemberDevice extends CandidateDevice {
  memberSeq: number;
}

/**
 * A room send's targets (step 7): every device of every member except the sending device, members
 * in join order, each member's devices in creation order.
 */
export function roomTargets<D extends MemberDevice>(devices: readonly D[], senderDevice: string): D[] {
  return devices.filter((d) => d.deviceId !== senderDevice).sort((a, b) => a.memberSeq - b.memberSeq || a.seq - b.seq);
}

/** What a store knows about contact rows, for the contacts of a first DM. */
export interface ContactFacts {
  has(nick: string, peer: string): boolean;
  /** The number of contacts of `nick`; asked only when a row is missing. */
  count(nick: string): number;
}

/**
 * The rows a queued DM adds: the first DM between two accounts makes each a contact of the
 * other, on each side only while that side is under its contacts limit (docs/API.md).
 */
export function firstDmContacts(from: string, to: string, known: ContactFacts): [nick: string, peer: string][] {
  const out: [string, string][] = [];
  for (const [nick, peer] of [
    [from, to],
    [to, from],
  ] as const) {
    if (!known.has(nick, peer) && known.count(nick) < LIMITS.contactsPerAccount) out.push([nick, peer]);
  }
  return out;
}

/**
 * How many of a device queue's oldest entries make room for `adding` new ones: a queue holds at
 * most LIMITS.queuePerDevice entries, and past that the oldest go (a mailbox, not an archive).
 */
export function queueOverflow(length: number, adding: number): number {
  return Math.max(0, Math.min(length, length + adding - LIMITS.queuePerDevice));
}
