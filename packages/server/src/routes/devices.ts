/** Device routes (interface.md "Devices", decisions.md §4). */
import { decodeB64urlLenient, encodeB64url, invalid, isDeviceId, isPushSubscription } from '@svc/protocol';
import * as devices from '../domain/devices.js';
import { parseJsonObject } from '../http/body.js';
import { createdOrOk, noContent, ok } from '../http/reply.js';
import { endpointHostAllowed } from '../push/address.js';
import { isStorableText } from '../http/text.js';
import { callerOf, param, type RouteHandlers } from './context.js';

export const deviceRoutes: RouteHandlers = {
  'POST /api/devices': async (ctx) => {
    const b = parseJsonObject(ctx.req);
    if (!isDeviceId(b.id)) throw invalid('id');
    const r = await devices.addDevice(ctx.deps, callerOf(ctx), b.id);
    return createdOrOk(r.created, r.device);
  },

  'GET /api/devices': async (ctx) => ok(await devices.listDevices(ctx.deps, callerOf(ctx))),

  'DELETE /api/devices/:id': async (ctx) => {
    await devices.removeDevice(ctx.deps, callerOf(ctx), param(ctx, 'id'));
    return noContent();
  },

  'PUT /api/devices/:id/push': async (ctx) => {
    const b = parseJsonObject(ctx.req);
    const sub = b.subscription;
    if (!isPushSubscription(sub) || !isStorableText(sub.endpoint) || !endpointHostAllowed(sub.endpoint)) throw invalid('subscription');
    // Only endpoint, p256dh and auth are kept (keys re-encoded unpadded); anything else is dropped.
    await devices.setPushSubscription(ctx.deps, callerOf(ctx), param(ctx, 'id'), {
      endpoint: sub.endpoint,
      keys: { p256dh: encodeB64url(decodeB64urlLenient(sub.keys.p256dh)!), auth: encodeB64url(decodeB64urlLenient(sub.keys.auth)!) },
    });
    return noContent();
  },

  'DELETE /api/devices/:id/push': async (ctx) => {
    await devices.deletePushSubscription(ctx.deps, callerOf(ctx), param(ctx, 'id'));
    return noContent();
  },
};
