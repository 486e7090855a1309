/**
 * The event stream of this device, wired to local storage: each envelope is decrypted and stored
 * before its promise resolves, so the SDK acknowledges only what is safely in IndexedDB. After each
 * `ready` (the replay is done) the rooms are re-read (room events are not queued; the SDK does
 * that) and the contacts too, and owed room keys are rotated.
 */
import type { Envelope, Room } from '@svc/protocol';
import { isSdkError, type DecryptedMessage, type EventStream } from '@svc/sdk';
import type { Message } from './history.js';
import { rekeyOwedRooms } from './rooms.js';
import type { Session } from './session.js';

const FAILURE_TEXT: Record<string, string> = {
  decrypt_failed: 'This message could not be decrypted: it was altered, forged, or sealed with a key this device does not have.',
  no_room_key: 'This message could not be decrypted: this device has no key for it.',
  unknown_sender: 'This message could not be decrypted: the sender’s account no longer exists.',
  untrusted_key: 'This message could not be decrypted: the sender’s key is not trusted.',
  malformed: 'This message could not be decrypted: it is not in a form this app knows.',
};

export function toMessage(d: DecryptedMessage, me: string): Message {
  if (d.ok) return { id: d.id, chat: d.chat, ts: d.ts, from: d.from, body: d.body, sentAt: d.sentAt, state: d.from === me ? 'sent' : 'received' };
  return { id: d.id, chat: d.chat, ts: d.ts, from: d.from, state: 'undecryptable', note: FAILURE_TEXT[d.reason] ?? FAILURE_TEXT.decrypt_failed! };
}

async function onMsg(s: Session, env: Envelope): Promise<void> {
  if (await s.history.has(env.id)) return; // a replay of what is already stored: just acknowledge it
  const d = await s.m.decryptEnvelope(env); // throws only for passing trouble: then it comes again
  const msg = toMessage(d, s.nick);
  await s.history.put(msg);
  const incoming = msg.from !== s.nick;
  await s.chats.touch(msg.chat, msg.ts, incoming && !s.isReading(msg.chat));
  s.emit('message', msg);
  s.publishChats();
}

export async function refreshContacts(s: Session): Promise<void> {
  const contacts = await s.m.api.contacts();
  s.chats.setContacts(contacts);
  for (const c of contacts) await s.trust.observe(c.nick, c.publicKey);
}

async function onReady(s: Session): Promise<void> {
  await refreshContacts(s).catch((e: unknown) => s.emit('problem', String(e)));
  s.emit('rooms', undefined);
  s.publishChats();
  await rekeyOwedRooms(s);
}

async function onRoom(s: Session, room: Room): Promise<void> {
  s.emit('rooms', undefined);
  s.publishChats();
  if (room.needsRekey) await rekeyOwedRooms(s);
}

async function onRoomLeft(s: Session, id: string): Promise<void> {
  const chat = `room:${id}`;
  await s.chats.forget(chat);
  s.emit('gone', chat);
  s.emit('rooms', undefined);
  s.publishChats();
}

export function startSync(s: Session): EventStream {
  const stream = s.m.events({
    device: s.deviceId,
    onMsg: (env) => onMsg(s, env),
    onReady: () => onReady(s),
    onRoom: (room) => onRoom(s, room),
    onRoomLeft: (ev) => onRoomLeft(s, ev.id),
    onState: (state, info) => {
      s.conn = state;
      s.emit('conn', state);
      if (state === 'closed' && info.reason === 'unauthenticated') s.emit('ended', 'session_ended');
      if (state === 'closed' && (info.reason === 'unknown_device' || info.reason === 'invalid_device')) s.emit('ended', 'device_removed');
    },
    onError: (e) => {
      if (isSdkError(e, 'unauthenticated')) return;
      console.warn('event stream:', e);
    },
  });
  return stream.start();
}
