/** Message routes (docs/API.md): the body's parse and shape checks come from the protocol's route table, the later checks from the domain. */
import { isUlid } from '@svc/protocol';
import * as messages from '../domain/messages.js';
import { accepted, noContent } from '../http/reply.js';
import { callerOf, type RouteHandlers } from './context.js';

export const messageRoutes: Pick<RouteHandlers, 'sendMessage' | 'ack'> = {
  sendMessage: async (ctx) => {
    const req = ctx.body();
    return accepted(await messages.sendMessage(ctx.deps, callerOf(ctx), req));
  },

  ack: async (ctx) => {
    const { ids } = ctx.body();
    // Only ULIDs can be queued: any other id is ignored like every id not in the queue, and never
    // reaches the store (PostgreSQL would fail the whole statement on a U+0000 in it).
    await messages.ack(
      ctx.deps,
      callerOf(ctx),
      ids.filter((id) => isUlid(id)),
    );
    return noContent();
  },
};
