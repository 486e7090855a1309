/**
 * Sending: the message is stored locally as "sending" first (so it is on screen at once and
 * survives a reload), then encrypted and sent by the SDK, then marked "sent" with the service's
 * time, or "failed" with the reason. A retry reuses the id, so the service never queues it twice.
 */
import type { SentMessage } from '@svc/sdk';
import { describeError } from './errors.js';
import type { Message } from './history.js';
import { splitChat } from './route.js';
import type { Session } from './session.js';

/** Whether sending to this chat waits for the user to accept a changed key; names the peers. */
export function heldPeers(s: Session, chat: string): string[] {
  const { kind, id } = splitChat(chat);
  if (kind === 'dm') return s.trust.isHeld(id) ? [id] : [];
  const room = s.m.room(id);
  return (room?.members ?? []).filter((n) => s.trust.isHeld(n));
}

async function transmit(s: Session, msg: Message): Promise<void> {
  const { kind, id } = splitChat(msg.chat);
  const opts = { id: msg.id, sentAt: msg.sentAt ?? s.m.api.now() };
  let sent: SentMessage;
  try {
    sent = kind === 'dm' ? await s.m.sendDm(id, msg.body ?? '', opts) : await s.m.sendRoom(id, msg.body ?? '', opts);
  } catch (e) {
    const failed: Message = { ...msg, state: 'failed', note: describeError(e) };
    await s.history.put(failed);
    s.emit('message', failed);
    return;
  }
  const done: Message = { ...msg, ts: sent.ts, state: 'sent' };
  delete done.note;
  await s.history.put(done);
  await s.chats.touch(msg.chat, sent.ts, false);
  s.emit('message', done);
  s.publishChats();
}

export async function send(s: Session, chat: string, text: string): Promise<void> {
  const now = s.m.api.now();
  const msg: Message = { id: s.m.api.newId(), chat, ts: now, from: s.nick, body: text, sentAt: now, state: 'sending' };
  await s.history.put(msg);
  await s.chats.touch(chat, now, false);
  s.emit('message', msg);
  s.publishChats();
  await transmit(s, msg);
}

/**
 * Sends a failed message again. Within the service's ±5 minute window the same id is a safe
 * retry; later, a new id is needed (the old one would be refused as clock skew).
 */
export async function retry(s: Session, msg: Message): Promise<void> {
  let m = msg;
  if (s.m.api.now() - (msg.sentAt ?? msg.ts) > 4 * 60 * 1000) {
    m = { ...msg, id: s.m.api.newId(), ts: s.m.api.now(), sentAt: s.m.api.now() };
    await s.db.delete('messages', msg.id);
    s.emit('removed', msg.id);
  }
  const sending: Message = { ...m, state: 'sending' };
  delete sending.note;
  await s.history.put(sending);
  s.emit('message', sending);
  await transmit(s, sending);
}
