/** Contact routes (docs/API.md). */
import { invalid, isNick } from '@svc/protocol';
import * as contacts from '../domain/contacts.js';
import { createdOrOk, noContent, ok } from '../http/reply.js';
import { callerOf, param, type RouteHandlers } from './context.js';

export const contactRoutes: Pick<RouteHandlers, 'contacts' | 'addContact' | 'deleteContact'> = {
  contacts: async (ctx) => ok(await contacts.listContacts(ctx.deps, callerOf(ctx))),

  addContact: async (ctx) => {
    const r = await contacts.addContact(ctx.deps, callerOf(ctx), ctx.body().nick);
    return createdOrOk(r.created, r.contact);
  },

  deleteContact: async (ctx) => {
    const nick = param(ctx, 'nick');
    if (!isNick(nick)) throw invalid('nick');
    await contacts.removeContact(ctx.deps, callerOf(ctx), nick);
    return noContent();
  },
};
