/** Acknowledgements (POST /api/ack): the ids leave the caller's device queue. */
import type { Caller, Deps } from './deps.js';
import { requireOwnDevice } from './devices.js';

export async function ack(deps: Deps, caller: Caller, ids: string[]): Promise<void> {
  const device = await requireOwnDevice(deps, caller);
  await deps.store.ack(device, [...new Set(ids)]);
}
