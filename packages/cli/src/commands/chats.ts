/**
 * `svc chats` and `svc history`: what this device holds. A device keeps what arrived since it
 * signed in (and what it sent); older history stays on the devices that received it.
 */
import { isShown, type ChatId, type ChatMessage } from '@svc/sdk';
import { openDevice, resolveChat } from '../device.js';
import { explain } from '../errors.js';
import type { Out } from './out.js';
import { format, shown } from './show.js';

export async function chats(env: NodeJS.ProcessEnv, out: Out, o: { json: boolean }): Promise<void> {
  const dev = await openDevice(env);
  try {
    // Room names come from the service; offline, a room shows by its id.
    await dev.m.syncRooms().catch((e: unknown) => out.info(`${explain(e, dev.server).message}; rooms show by id`));
    const held = new Map<ChatId, ChatMessage[]>();
    for (const m of await dev.store.all()) if (isShown(m)) held.set(m.chat, [...(held.get(m.chat) ?? []), m]);
    for (const r of dev.m.rooms) if (!held.has(`room:${r.id}`)) held.set(`room:${r.id}`, []);
    for (const [chat, list] of held) {
      const last = list.at(-1);
      const name = chat.startsWith('room:') ? (dev.m.room(chat.slice(5))?.name ?? chat) : chat.slice(3);
      const row = { chat, name, kind: chat.slice(0, chat.indexOf(':')), messages: list.length, last: last ? new Date(last.ts).toISOString() : null };
      await out.line(
        o.json ? JSON.stringify(row) : `${row.kind === 'room' ? '#' : ''}${name}  ${row.messages} messages${row.last ? `  last ${row.last}` : ''}`,
      );
    }
  } finally {
    await dev.close();
  }
}

export async function history(env: NodeJS.ProcessEnv, out: Out, o: { chat: string; room: boolean; limit: number; json: boolean }): Promise<void> {
  const dev = await openDevice(env);
  try {
    const { chat } = await resolveChat(dev, o.chat, o.room).catch((e: unknown) => Promise.reject(explain(e, dev.server)));
    for (const m of await dev.store.chat(chat, { limit: o.limit })) await out.line(format(shown(m, dev.m), o.json));
  } finally {
    await dev.close();
  }
}
