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
async function onMsg(session: Session, env: Envelope): Promise<void> {
  const ingested = await session.conv.receive(env);
  // Another of this account's devices muted or unmuted a chat: the header and the list follow.
  if (ingested.ignored === 'mute') {
    await session.mutesChangedElsewhere();
  }
}

export async function refreshContacts(session: Session): Promise<void> {
  await session.contactsListed(await session.messenger.api.contacts());
}

async function onReady(session: Session): Promise<void> {
  // The connection is back: what waits in the outbox goes now.
  session.conv.online();
  await refreshContacts(session).catch((e: unknown) => session.reportProblem(String(e)));
  await session.membership.update(true);
  session.roomsChanged();
  await rekeyOwedRooms(session);
  await session.connected().catch((e: unknown) => session.reportProblem(`History transfer: ${describeError(e)}`));
}

async function onRoom(session: Session, room: Room): Promise<void> {
  await session.membership.update();
  session.roomsChanged();
  if (room.needsRekey) await rekeyOwedRooms(session);
}

/** Removed from a room (or it was deleted): it stays in the list, read-only, with its history. */
async function onRoomLeft(session: Session, id: string): Promise<void> {
  const chat: ChatId = `room:${id}`;
  await session.membership.removed(id, session.chats.meta(chat)?.title ?? 'a room');
  session.roomsChanged();
}

export function startSync(session: Session): EventStream {
  const stream = session.messenger.events({
    device: session.deviceId,
    onMsg: (env) => onMsg(session, env),
    onReady: () => onReady(session),
    onRoom: (room) => onRoom(session, room),
    onRoomLeft: (ev) => onRoomLeft(session, ev.id),
    onState: (state, info) => {
      session.connectionChanged(state);
      if (state === 'closed' && info.reason === 'unauthenticated') session.endedByService('session_ended');
      if (state === 'closed' && (info.reason === 'unknown_device' || info.reason === 'invalid_device')) session.endedByService('device_removed');
    },
    onError: (error) => {
      if (isSdkError(error, 'unauthenticated')) return;
      console.warn('event stream:', error);
    },
  });
  return stream.start();
}
