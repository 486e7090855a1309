/** Contact routes (interface.md "Contacts", decisions.md §4). */
import { invalid, isNick } from '@svc/protocol';
import * as contacts from '../domain/contacts.js';
import { parseJsonObject } from '../http/body.js';
import { createdOrOk, noContent, ok } from '../http/reply.js';
import { callerOf, param, type RouteHandlers } from './context.js';

export const contactRoutes: RouteHandlers = {
  'GET /api/contacts': async (ctx) => ok(await contacts.listContacts(ctx.deps, callerOf(ctx))),

  'POST /api/contacts': async (ctx) => {
    const b = parseJsonObject(ctx.req);
    if (!isNick(b.nick)) throw invalid('nick');
    const r = await contacts.addContact(ctx.deps, callerOf(ctx), b.nick);
    return createdOrOk(r.created, r.contact);
  },

  'DELETE /api/contacts/:nick': async (ctx) => {
    const nick = param(ctx, 'nick');
    if (!isNick(nick)) throw invalid('nick');
    await contacts.removeContact(ctx.deps, callerOf(ctx), nick);
    return noContent();
  },
};
