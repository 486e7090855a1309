/** Rooms: create, change members (add, remove, rotate), leave, delete, list. */
import { ApiError, isId16, type CreateRoomRequest, type MembersRequest, type Room } from '@svc/protocol';
import type { Caller, Deps } from './deps.js';
import { fanoutDeliveries, publishLeave, roomDelivery, roomLeftDelivery } from './fanout.js';
import { optionalOwnDevice, ownerOf } from './devices.js';

export function listRooms(deps: Deps, caller: Caller): Promise<Room[]> {
  return deps.store.listRooms(caller.nick);
}

/** Shape-level key rule of creation: no two keys for one nick, exactly one for the creator. */
function checkCreateKeys(caller: Caller, req: CreateRoomRequest): void {
  const tos = req.keys.map((k) => k.to);
  if (new Set(tos).size !== tos.length || tos.filter((t) => t === caller.nick).length !== 1) throw new ApiError('keys_mismatch');
}

export async function createRoom(deps: Deps, caller: Caller, req: CreateRoomRequest): Promise<Room> {
  checkCreateKeys(caller, req);
  const device = await optionalOwnDevice(deps, caller);
  const r = await deps.store.createRoom({ id: req.id, name: req.name, owner: caller.nick, keyId: req.keyId, keys: req.keys, now: deps.now() });
  if ('error' in r) throw new ApiError(r.error);
  const others = r.ownerDevices.filter((d) => d !== device);
  if (others.length > 0) await deps.bus.deliver([roomDelivery({ ...r.room, keys: [] }, r.room.keys[0] ?? null, others)]);
  return r.room;
}

/*
 * A room id from the path that is not an id16 names no room (every room id is one), so it is
 * answered as a room that does not exist without asking the store: PostgreSQL refuses some
 * characters (U+0000) in text outright, and that must not become a 500.
 */

export async function changeMembers(deps: Deps, caller: Caller, roomId: string, req: MembersRequest): Promise<Room> {
  if (!isId16(roomId)) throw new ApiError('not_owner');
  const r = await deps.store.changeMembers({
    roomId,
    caller: caller.nick,
    add: req.add,
    remove: req.remove,
    keyId: req.keyId,
    keys: req.keys,
    now: deps.now(),
  });
  if ('error' in r) throw new ApiError(r.error, r.field !== undefined ? { field: r.field } : {});
  await deps.bus.deliver(fanoutDeliveries(r, await skipDevice(deps, caller)));
  const mine = r.members.find((m) => m.nick === caller.nick)?.key;
  return { ...r.room, keys: mine ? [mine] : [] };
}

export async function leaveRoom(deps: Deps, caller: Caller, roomId: string): Promise<void> {
  const device = await optionalOwnDevice(deps, caller);
  if (!isId16(roomId)) return;
  const r = await deps.store.leaveRoom(roomId, caller.nick);
  await publishLeave(deps, r, device);
}

export async function deleteRoom(deps: Deps, caller: Caller, roomId: string): Promise<void> {
  if (!isId16(roomId)) return;
  const r = await deps.store.deleteRoom(roomId, caller.nick);
  if ('error' in r) throw new ApiError(r.error);
  const skip = await skipDevice(deps, caller);
  const out = r.members
    .map((m) =>
      roomLeftDelivery(
        roomId,
        m.devices.filter((d) => d !== skip),
      ),
    )
    .filter((d) => d.devices.length > 0);
  if (out.length > 0) await deps.bus.deliver(out);
}

/**
 * On routes where X-Device is not checked, a header naming an own device still keeps the event
 * from that device (events caused by a request with X-Device are not sent to it); a foreign or
 * unknown id is simply ignored.
 */
async function skipDevice(deps: Deps, caller: Caller): Promise<string | undefined> {
  if (caller.device === undefined) return undefined;
  return (await ownerOf(deps, caller, caller.device)) === caller.nick ? caller.device : undefined;
}
