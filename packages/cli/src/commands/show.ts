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
  /**
   * text; file, photo or voice (an attachment, `text` its caption); undecryptable (it did not
   * open: a forged or damaged message); unknown (a type of a newer client); event (a membership line).
   */
  type: ChatMessage['kind'] | 'file' | 'photo' | 'voice';
  text: string;
  /** The attachment's name, MIME type and size in bytes. */
  file?: { name: string; mime: string; size: number };
}

export function shown(m: ChatMessage, messenger: Messenger): Shown {
  const room = m.chat.startsWith('room:') ? messenger.room(m.chat.slice(5))?.name : undefined;
  const text = m.kind === 'text' ? (m.deleted ? '' : (m.body ?? '')) : (m.note ?? '');
  const a = m.attachment;
  return {
    chat: m.chat,
    ...(room !== undefined ? { room } : {}),
    from: m.from,
    id: m.id,
    time: new Date(m.ts).toISOString(),
    type: a && !m.deleted ? a.type : m.kind,
    text,
    ...(a && !m.deleted ? { file: { name: a.name, mime: a.mime, size: a.plainSize } } : {}),
  };
}

export function format(s: Shown, json: boolean): string {
  if (json) return JSON.stringify(s);
  const where = s.chat.startsWith('room:') ? `#${s.room ?? s.chat.slice(5)} ` : '';
  const file = s.file ? `${s.file.name} (${s.file.size} bytes)` : '';
  const what = s.type === 'text' ? s.text : `[${s.type}] ${[file, s.text].filter(Boolean).join(' ')}`;
  return `${s.time.slice(0, 19).replace('T', ' ')}  ${where}${s.from}: ${what}`;
}
