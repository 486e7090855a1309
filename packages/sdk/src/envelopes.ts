/**
 * Sending and opening envelopes for one signed-in account: any plaintext type of
 * wire/plaintext.ts, to a DM peer (pair key) or a room (its newest key), and the decryption
 * of what arrives, which never throws for a bad envelope but says why it failed.
 */
import { isNick, type Envelope } from '@svc/protocol';
import type { ApiClient } from './api.js';
import type { Plain, PlainInput } from './wire/plaintext.js';
import { decryptDm, decryptRoomMessage, encryptDm, encryptRoomMessage } from './crypto/message.js';
import { SdkError } from './errors.js';
import type { Peers } from './peers.js';
import type { RoomBook } from './rooms.js';

/** Chat id as the push payload and the app use it. */
export type ChatId = `dm:${string}` | `room:${string}`;

export type DecryptFailure =
  /** the tag did not verify (tampered, forged sender, or wrong key), or the plaintext is malformed. */
  | 'decrypt_failed'
  /** no key with this keyId is held for the room. */
  | 'no_room_key'
  /** the sender's account no longer exists, so its public key is unknown. */
  | 'unknown_sender'
  /** the app's keyCheck refused the sender's key. */
  | 'untrusted_key'
  /** the envelope is not a form this client knows (bad target, addressed to someone else). */
  | 'malformed';

interface Opened {
  id: string;
  ts: number;
  from: string;
  chat: ChatId;
}

export type DecryptedMessage =
  | (Opened & { ok: true; plain: Plain; sentAt: number; /** the text of a `text` message */ body?: string })
  | (Opened & { ok: false; reason: DecryptFailure });

export interface SentMessage {
  id: string;
  /** Service acceptance time. */
  ts: number;
  chat: ChatId;
  from: string;
  plain: PlainInput;
  sentAt: number;
  /** The text of a `text` message. */
  body?: string;
}

export interface SendOptions {
  /** Reuse an id to retry a send whose answer was lost (the service answers the original {id, ts}). */
  id?: string;
  sentAt?: number;
}

export interface MessageContext {
  api: ApiClient;
  peers: Peers;
  rooms: RoomBook;
  nick: string;
}

export function splitChatId(chat: string): { kind: 'dm' | 'room'; id: string } {
  if (chat.startsWith('dm:')) return { kind: 'dm', id: chat.slice(3) };
  if (chat.startsWith('room:')) return { kind: 'room', id: chat.slice(5) };
  throw new SdkError('invalid', { message: `Not a chat id: ${chat}` });
}

/** Sends `plain` (its sentAt set here unless given) to a chat: `dm:<nick>` or `room:<id>`. */
export async function sendPlain(c: MessageContext, chat: ChatId, plain: PlainInput, o: SendOptions = {}): Promise<SentMessage> {
  const { kind, id: target } = splitChatId(chat);
  const id = o.id ?? c.api.newId();
  const p = { ...plain, sentAt: o.sentAt ?? (plain.sentAt || c.api.now()) };
  let r;
  if (kind === 'dm') {
    const key = await c.peers.pair(target, 'send');
    const s = await encryptDm(key, { id, from: c.nick, to: target }, p);
    r = await c.api.sendMessage({ id, to: { dm: target }, keyId: 'dm', iv: s.iv, ct: s.ct });
  } else {
    const k = await roomSendKey(c, target);
    // Who may read the room is the membership record's call. An announcement carries only what
    // the service knows already (who is in the room), and must go for the records to catch up.
    if (p.type !== 'members') await c.rooms.checkSend(target, k.from);
    const s = await encryptRoomMessage(k.key, { id, from: c.nick, roomId: target, keyId: k.keyId }, p);
    r = await c.api.sendMessage({ id, to: { room: target }, keyId: k.keyId, iv: s.iv, ct: s.ct });
  }
  return { id: r.id, ts: r.ts, chat, from: c.nick, plain: p, sentAt: p.sentAt, ...(p.type === 'text' ? { body: p.body } : {}) };
}

/**
 * The room's newest key as the service lists it, never an older one: when that key is not held
 * (its unwrap failed, or the room is not known yet) the rooms are read again once, and if it is
 * still not held, SdkError `no_room_key` (`not_member` when the room is not listed at all). The
 * key must also come from a trusted wrapper: its wrapper's public key, the one it was unwrapped
 * with, passes keyCheck for `send` (one's own keys always do). A key wrapped under a changed, not
 * yet accepted key thus holds sending like a DM to that peer until the user accepts the change.
 */
async function roomSendKey(c: MessageContext, roomId: string): Promise<{ keyId: string; key: CryptoKey; from: string }> {
  let k = c.rooms.sendKey(roomId);
  if (!k) {
    await c.rooms.sync();
    k = c.rooms.sendKey(roomId);
  }
  // keyCheck may wait for the user's consent; if a newer key came meanwhile, check that one.
  for (let tries = 0; k; tries++) {
    await c.peers.check(k.from, k.publicKey, 'send');
    if (c.rooms.newestKeyId(roomId) === k.keyId) break;
    k = tries < 3 ? c.rooms.sendKey(roomId) : undefined;
  }
  if (!k) {
    if (!c.rooms.get(roomId)) throw new SdkError('not_member');
    throw new SdkError('no_room_key', {
      message:
        'The room’s newest key could not be unwrapped on this device, and an older key is never used for sending. Retry later, or ask the owner to rotate the key.',
    });
  }
  return k;
}

/**
 * Decrypts one envelope. Never throws for a bad envelope: a failure is a result with a reason,
 * to show as an error. It throws only for passing trouble fetching the sender's key (network,
 * rate limit, session ended), so that the envelope is not acknowledged and comes again.
 */
export async function decryptEnvelope(c: MessageContext, env: Envelope): Promise<DecryptedMessage> {
  const to = env?.to as { dm?: unknown; room?: unknown } | undefined;
  const base = { id: String(env?.id), ts: Number(env?.ts), from: String(env?.from) };
  if (typeof to?.dm === 'string') {
    // An incoming DM is addressed to me; my own DM (sent from another device) is addressed to the peer.
    const peer = env.from === c.nick ? to.dm : env.from;
    const chat: ChatId = `dm:${peer}`;
    if (env.from !== c.nick && to.dm !== c.nick) return { ...base, chat, ok: false, reason: 'malformed' };
    if (!isNick(peer)) return { ...base, chat, ok: false, reason: 'malformed' };
    let key: CryptoKey;
    try {
      key = await c.peers.pair(peer, 'receive');
    } catch (e) {
      return { ...base, chat, ok: false, reason: failureOf(e) };
    }
    return open(base, chat, () => decryptDm(key, env));
  }
  if (typeof to?.room === 'string') {
    const roomId = to.room;
    const chat: ChatId = `room:${roomId}`;
    let key = c.rooms.keyring.get(roomId, env.keyId);
    if (!key) {
      // The key may have come while the stream was down (room events are not queued).
      await c.rooms.sync().catch(() => undefined);
      key = c.rooms.keyring.get(roomId, env.keyId);
    }
    if (!key) return { ...base, chat, ok: false, reason: 'no_room_key' };
    const k = key;
    return open(base, chat, () => decryptRoomMessage(k, env));
  }
  return { ...base, chat: `dm:${base.from}`, ok: false, reason: 'malformed' };
}

async function open(base: { id: string; ts: number; from: string }, chat: ChatId, f: () => Promise<Plain>): Promise<DecryptedMessage> {
  try {
    const plain = await f();
    return { ...base, chat, ok: true, plain, sentAt: plain.sentAt, ...(plain.type === 'text' ? { body: plain.body } : {}) };
  } catch {
    return { ...base, chat, ok: false, reason: 'decrypt_failed' };
  }
}

/**
 * A permanent failure becomes a reason; a passing one (network, rate limit, session ended) is
 * rethrown so the envelope is not acknowledged and comes again.
 */
function failureOf(e: unknown): DecryptFailure {
  if (e instanceof SdkError) {
    if (e.code === 'unknown_user') return 'unknown_sender';
    if (e.code === 'untrusted_key') return 'untrusted_key';
    if (e.code === 'invalid') return 'malformed';
  }
  throw e;
}
