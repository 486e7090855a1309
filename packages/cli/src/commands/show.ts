/** How a message record is written out: one line for people, or one JSON object per line. */
import type { ChatMessage, Messenger } from '@svc/sdk';

export interface Shown {
  chat: string;
  /** The room's name, for a room. */
  room?: string;
  from: string;
  id: string;
  /** When the service accepted it, ISO 8601. */
  time: string;
  /** text; undecryptable (it did not open: a forged or damaged message); unknown (a type of a newer client); event (a membership line). */
  type: ChatMessage['kind'];
  text: string;
}

export function shown(m: ChatMessage, messenger: Messenger): Shown {
  const room = m.chat.startsWith('room:') ? messenger.room(m.chat.slice(5))?.name : undefined;
  const text = m.kind === 'text' ? (m.deleted ? '' : (m.body ?? '')) : (m.note ?? '');
  return { chat: m.chat, ...(room !== undefined ? { room } : {}), from: m.from, id: m.id, time: new Date(m.ts).toISOString(), type: m.kind, text };
}

export function format(s: Shown, json: boolean): string {
  if (json) return JSON.stringify(s);
  const where = s.chat.startsWith('room:') ? `#${s.room ?? s.chat.slice(5)} ` : '';
  const what = s.type === 'text' ? s.text : `[${s.type}] ${s.text}`;
  return `${s.time.slice(0, 19).replace('T', ' ')}  ${where}${s.from}: ${what}`;
}
