/** One message in the log: sender, time, text; or an error state that never shows as text. */
import type { Message } from '../app/history.js';
import { h } from './dom.js';
import { clockTime, fullTime } from './format.js';

export function messageItem(m: Message, me: string, onRetry: (m: Message) => void): HTMLElement {
  const mine = m.from === me;
  const time = h('time', { datetime: new Date(m.ts).toISOString(), title: fullTime(m.ts) }, clockTime(m.ts));
  const meta = h('div', { class: 'meta' }, h('span', { class: 'from' }, mine ? `${m.from} (you)` : m.from), time);
  if (m.state === 'undecryptable') {
    return h('div', { class: 'msg undecryptable', 'data-id': m.id }, meta, h('p', { class: 'text' }, m.note ?? 'This message could not be decrypted.'));
  }
  const el = h('div', { class: mine ? 'msg mine' : 'msg', 'data-id': m.id }, meta, h('p', { class: 'text' }, m.body ?? ''));
  if (m.state === 'sending') el.append(h('div', { class: 'state' }, 'Sending…'));
  if (m.state === 'failed') {
    el.append(
      h('div', { class: 'state failed' }, `Not sent: ${m.note ?? 'unknown error'} `),
      h('button', { type: 'button', class: 'link', onclick: () => onRetry(m) }, 'Retry'),
    );
  }
  return el;
}
