/** Devices: registration, listing, removal, push subscriptions, and the X-Device check. */
import { ApiError, isDeviceId, type Device, type PushSubscriptionInput } from '@svc/protocol';
import type { Caller, Deps } from './deps.js';

/**
 * The X-Device header (or a path id) must name one of the caller's devices; missing counts as
 * unknown, and so does an id no device can have, without asking the store (PostgreSQL refuses
 * some characters, U+0000, in text outright, and that must not become a 500).
 */
export async function requireOwnDevice(deps: Deps, caller: Caller, id: string | undefined = caller.device): Promise<string> {
  const device = wellFormedDevice(id);
  if ((await ownerOf(deps, caller, device)) !== caller.nick) throw new ApiError('unknown_device');
  return device;
}

/** The part of the X-Device check that needs no store: an id no device can have is unknown. */
export function wellFormedDevice(id: string | undefined): string {
  if (id === undefined || !isDeviceId(id)) throw new ApiError('unknown_device');
  return id;
}

/** The owner of a device id: for the caller's own X-Device, the one read with the session. */
export function ownerOf(deps: Deps, caller: Caller, id: string): Promise<string | null> {
  return id === caller.device && caller.deviceOwner ? caller.deviceOwner : deps.store.deviceOwner(id);
}

/** An optional X-Device header: absent is fine, present must be an own device. */
export async function optionalOwnDevice(deps: Deps, caller: Caller): Promise<string | undefined> {
  if (caller.device === undefined) return undefined;
  return requireOwnDevice(deps, caller);
}

export async function addDevice(deps: Deps, caller: Caller, id: string) {
  const r = await deps.store.addDevice(caller.nick, id, deps.now());
  if ('error' in r) throw new ApiError(r.error);
  return { created: r.status === 'created', device: { id: r.device.id, createdAt: r.device.createdAt } };
}

export async function listDevices(deps: Deps, caller: Caller): Promise<Device[]> {
  const rows = await deps.store.listDevices(caller.nick);
  const online = await deps.bus.onlineDevices(rows.map((d) => d.id));
  return rows.map((d) => ({ id: d.id, createdAt: d.createdAt, lastSeenAt: d.lastSeenAt, push: d.push, online: online.has(d.id) }));
}

export async function removeDevice(deps: Deps, caller: Caller, id: string): Promise<void> {
  if (!isDeviceId(id) || !(await deps.store.deleteDevice(caller.nick, id))) throw new ApiError('unknown_device');
  await deps.bus.closeStreams({ devices: [id] });
}

export async function setPushSubscription(deps: Deps, caller: Caller, deviceId: string, sub: PushSubscriptionInput): Promise<void> {
  await requireOwnDevice(deps, caller);
  await requireOwnDevice(deps, caller, deviceId);
  await deps.store.setPushSubscription(deviceId, { endpoint: sub.endpoint, p256dh: sub.keys.p256dh, auth: sub.keys.auth });
}

export async function deletePushSubscription(deps: Deps, caller: Caller, deviceId: string): Promise<void> {
  await requireOwnDevice(deps, caller);
  await requireOwnDevice(deps, caller, deviceId);
  await deps.store.deletePushSubscription(deviceId);
}
