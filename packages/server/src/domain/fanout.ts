/**
 * Turning room changes into events: who gets `room` (with only their own new key) and who gets
 * `room_left`. The device that made the request (X-Device) never gets an event for it.
 */
import { eventData, type Room } from '@svc/protocol';
import type { Delivery } from '../bus/types.js';
import type { LeaveResult, RoomFanout } from '../store/types.js';
import type { Deps } from './deps.js';

function except(devices: string[], skip: string | undefined): string[] {
  return skip === undefined ? devices : devices.filter((d) => d !== skip);
}

export function roomDelivery(room: Room, key: Room['keys'][number] | null, devices: string[]): Delivery {
  return { devices, event: 'room', data: eventData('room', { ...room, keys: key ? [key] : [] }) };
}

export function roomLeftDelivery(roomId: string, devices: string[]): Delivery {
  return { devices, event: 'room_left', data: eventData('room_left', { id: roomId }) };
}

export function fanoutDeliveries(f: RoomFanout, skip: string | undefined): Delivery[] {
  const out: Delivery[] = f.members.map((m) => roomDelivery(f.room, m.key, except(m.devices, skip)));
  for (const r of f.removed) out.push(roomLeftDelivery(f.room.id, except(r.devices, skip)));
  return out.filter((d) => d.devices.length > 0);
}

/** After a leave: remaining members hear the room (needsRekey, no key); the leaver's other devices hear room_left. */
export async function publishLeave(deps: Deps, r: LeaveResult, skip: string | undefined): Promise<void> {
  if (!r.left) return;
  const out: Delivery[] = r.fanout ? fanoutDeliveries(r.fanout, skip) : [];
  const mine = except(r.callerDevices, skip);
  if (mine.length > 0) out.push(roomLeftDelivery(r.roomId, mine));
  if (out.length > 0) await deps.bus.deliver(out);
}
