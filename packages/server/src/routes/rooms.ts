/** Room routes (docs/API.md): the body checks come from the protocol's route table, the rest from the domain. */
import * as rooms from '../domain/rooms.js';
import { created, noContent, ok } from '../http/reply.js';
import { callerOf, param, type RouteHandlers } from './context.js';

export const roomRoutes: Pick<RouteHandlers, 'rooms' | 'createRoom' | 'changeMembers' | 'leaveRoom' | 'deleteRoom'> = {
  rooms: async (ctx) => ok(await rooms.listRooms(ctx.deps, callerOf(ctx))),

  createRoom: async (ctx) => {
    const req = ctx.body();
    return created(await rooms.createRoom(ctx.deps, callerOf(ctx), req));
  },

  changeMembers: async (ctx) => {
    const req = ctx.body();
    return ok(await rooms.changeMembers(ctx.deps, callerOf(ctx), param(ctx, 'id'), req));
  },

  leaveRoom: async (ctx) => {
    await rooms.leaveRoom(ctx.deps, callerOf(ctx), param(ctx, 'id'));
    return noContent();
  },

  deleteRoom: async (ctx) => {
    await rooms.deleteRoom(ctx.deps, callerOf(ctx), param(ctx, 'id'));
    return noContent();
  },
};
