/** Device routes (docs/API.md). */
import { invalid } from '@svc/protocol';
import * as devices from '../domain/devices.js';
import { createdOrOk, noContent, ok } from '../http/reply.js';
import { endpointHostAllowed } from '../push/address.js';
import { callerOf, param, type RouteHandlers } from './context.js';

export const deviceRoutes: Pick<RouteHandlers, 'addDevice' | 'devices' | 'deleteDevice' | 'setPush' | 'deletePush'> = {
  addDevice: async (ctx) => {
    const r = await devices.addDevice(ctx.deps, callerOf(ctx), ctx.body().id);
    return createdOrOk(r.created, r.device);
  },

  devices: async (ctx) => ok(await devices.listDevices(ctx.deps, callerOf(ctx))),

  deleteDevice: async (ctx) => {
    await devices.removeDevice(ctx.deps, callerOf(ctx), param(ctx, 'id'));
    return noContent();
  },

  setPush: async (ctx) => {
    const { subscription } = ctx.body();
    // A literal non-public IP host is refused whatever the configuration: the flag for tests only
    // lets push connections reach such addresses through host names.
    if (!endpointHostAllowed(subscription.endpoint)) throw invalid('subscription');
    await devices.setPushSubscription(ctx.deps, callerOf(ctx), param(ctx, 'id'), subscription);
    return noContent();
  },

  deletePush: async (ctx) => {
    await devices.deletePushSubscription(ctx.deps, callerOf(ctx), param(ctx, 'id'));
    return noContent();
  },
};
