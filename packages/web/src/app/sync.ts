/**
 * The event stream of this device, wired to local storage: each envelope is decrypted and stored
 * before its promise resolves, so the SDK acknowledges only what is safely in IndexedDB. After each
 * `ready` (the replay is done) the rooms are re-read (room events are not queued; the SDK does
 * that) and the contacts too, and owed room keys are rotated.
 */
import type { Envelope, Room } from '@svc/protocol';
import { isSdkError, type ChatId, type EventStream } from '@svc/sdk';
import { describeError } from './errors.js';
import { rekeyOwedRooms } from './rooms.js';
import type { Session } from './session.js';

/**
 * One envelope into the conversation store (decrypted, with the receiving rules of the SDK); it
 * resolves once stored, so the stream acknowledges only what IndexedDB holds. A replay of what is
 * already stored is just acknowledged.
 */
async function onMsg(s: Session, env: Envelope): Promise<void> {
  const r = await s.conv.receive(env);
  // Another of this account's devices muted or unmuted a chat: the header and the list follow.
  if (r.ignored === 'mute') {
    await s.mutesChangedElsewhere();
  }
}

export async function refreshContacts(s: Session): Promise<void> {
  await s.contactsListed(await s.m.api.contacts());
}

async function onReady(s: Session): Promise<void> {
  // The connection is back: what waits in the outbox goes now.
  s.conv.online();
  await refreshContacts(s).catch((e: unknown) => s.reportProblem(String(e)));
  await s.membership.update(true);
  s.roomsChanged();
  await rekeyOwedRooms(s);
  await s.connected().catch((e: unknown) => s.reportProblem(`History transfer: ${describeError(e)}`));
}

async function onRoom(s: Session, room: Room): Promise<void> {
  await s.membership.update();
  s.roomsChanged();
  if (room.needsRekey) await rekeyOwedRooms(s);
}

/** Removed from a room (or it was deleted): it stays in the list, read-only, with its history. */
async function onRoomLeft(s: Session, id: string): Promise<void> {
  const chat: ChatId = `room:${id}`;
  await s.membership.removed(id, s.chats.meta(chat)?.title ?? 'a room');
  s.roomsChanged();
}

export function startSync(s: Session): EventStream {
  const stream = s.m.events({
    device: s.deviceId,
    onMsg: (env) => onMsg(s, env),
    onReady: () => onReady(s),
    onRoom: (room) => onRoom(s, room),
    onRoomLeft: (ev) => onRoomLeft(s, ev.id),
    onState: (state, info) => {
      s.connectionChanged(state);
      if (state === 'closed' && info.reason === 'unauthenticated') s.endedByService('session_ended');
      if (state === 'closed' && (info.reason === 'unknown_device' || info.reason === 'invalid_device')) s.endedByService('device_removed');
    },
    onError: (e) => {
      if (isSdkError(e, 'unauthenticated')) return;
      console.warn('event stream:', e);
    },
  });
  return stream.start();
}
