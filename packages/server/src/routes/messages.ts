/** Message routes (docs/API.md): the body's parse and shape checks come from the protocol's route table, the later checks from the domain. */
import { isUlid } from '@svc/protocol';
import { ack } from '../domain/ack.js';
import { sendMessage } from '../domain/send.js';
import { accepted, noContent } from '../http/reply.js';
import { callerOf, type RouteHandlers } from './context.js';

export const messageRoutes: Pick<RouteHandlers, 'sendMessage' | 'ack'> = {
  sendMessage: async (ctx) => {
    const req = ctx.body();
    return accepted(await sendMessage(ctx.deps, callerOf(ctx), req));
  },

  ack: async (ctx) => {
    const { ids } = ctx.body();
    // Only ULIDs can be queued: any other id is ignored like every id not in the queue, and never
    // reaches the store (PostgreSQL would fail the whole statement on a U+0000 in it).
    await ack(
      ctx.deps,
      callerOf(ctx),
      ids.filter((id) => isUlid(id)),
    );
    return noContent();
  },
};
