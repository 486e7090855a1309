/** Room routes (interface.md "Rooms", decisions.md §5), with the create and members checks in the spec's order. */
import { invalid, isId16, isNick, isRoomName, isWrappedKeyList, type CreateRoomRequest, type MembersRequest } from '@svc/protocol';
import * as rooms from '../domain/rooms.js';
import { parseJsonObject } from '../http/body.js';
import { created, noContent, ok } from '../http/reply.js';
import { callerOf, param, type RouteHandlers } from './context.js';

function createShape(b: Record<string, unknown>): CreateRoomRequest {
  if (!isId16(b.id)) throw invalid('id');
  if (!isRoomName(b.name)) throw invalid('name');
  if (!isId16(b.keyId)) throw invalid('keyId');
  if (!isWrappedKeyList(b.keys)) throw invalid('keys');
  return { id: b.id, name: b.name, keyId: b.keyId, keys: b.keys.map((k) => ({ to: k.to, iv: k.iv, ct: k.ct })) };
}

/** A list of nicks; duplicates collapse to one. */
function nickList(v: unknown, field: string): string[] {
  if (!Array.isArray(v) || !v.every(isNick)) throw invalid(field);
  return [...new Set(v as string[])];
}

function membersShape(b: Record<string, unknown>): MembersRequest {
  const add = nickList(b.add, 'add');
  const remove = nickList(b.remove, 'remove');
  if (remove.some((n) => add.includes(n))) throw invalid('remove');
  if (!isId16(b.keyId)) throw invalid('keyId');
  if (!isWrappedKeyList(b.keys)) throw invalid('keys');
  return { add, remove, keyId: b.keyId, keys: b.keys.map((k) => ({ to: k.to, iv: k.iv, ct: k.ct })) };
}

export const roomRoutes: RouteHandlers = {
  'GET /api/rooms': async (ctx) => ok(await rooms.listRooms(ctx.deps, callerOf(ctx))),

  'POST /api/rooms': async (ctx) => {
    const req = createShape(parseJsonObject(ctx.req));
    return created(await rooms.createRoom(ctx.deps, callerOf(ctx), req));
  },

  'POST /api/rooms/:id/members': async (ctx) => {
    const req = membersShape(parseJsonObject(ctx.req));
    return ok(await rooms.changeMembers(ctx.deps, callerOf(ctx), param(ctx, 'id'), req));
  },

  'POST /api/rooms/:id/leave': async (ctx) => {
    await rooms.leaveRoom(ctx.deps, callerOf(ctx), param(ctx, 'id'));
    return noContent();
  },

  'DELETE /api/rooms/:id': async (ctx) => {
    await rooms.deleteRoom(ctx.deps, callerOf(ctx), param(ctx, 'id'));
    return noContent();
  },
};
