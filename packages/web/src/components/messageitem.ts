/**
 * One record of the log as a `listitem`: sender and time (shown at the head of a group, read by
 * screen readers on every row: components/messagelog.ts groups), the quoted message of a reply, a
 * file, photo or voice message, the text (links clickable, nothing else ever markup), reactions as
 * buttons ("👍 2"), and in the bubble's last line "(edited)", one's own message's time and status
 * (an icon named "Sending", "Sent", "Delivered" or "Read"; the words "Waiting to send, 12 s" or
 * "Not sent" with Retry), and "Message actions" beside the bubble, shown on hover and focus.
 * A record that did not open, or is of a newer client's type, shows its note and never text.
 */
import type { ChatMessage } from '@svc/sdk';
import { h } from './dom.js';
import { fileView, type FileContext } from './fileview.js';
import { clockTime, fullTime } from './format.js';
import { linkify } from './linkify.js';
import { photoView } from './photoview.js';
import { voiceView } from './voiceview.js';

export interface ItemContext {
  me: string;
  /** The record a reply quotes, when loaded. */
  quoted(id: string): ChatMessage | undefined;
  /** The status words of one's own message (the outbox's countdown included). */
  status(m: ChatMessage): string;
  onActions(m: ChatMessage, button: HTMLButtonElement): void;
  onReact(m: ChatMessage, emoji: string): void;
  onRetry(m: ChatMessage): void;
  onQuote(id: string): void;
  /** Whether the message mentions the reader (highlighted, and said). */
  mentionsMe?(m: ChatMessage): boolean;
  /** The words of the time left before a message with a timer disappears ("29 seconds"), or null while its clock has not started. */
  expiresIn?(m: ChatMessage): string | null;
  file: FileContext;
}

export const DELETED_TEXT = 'Message deleted';

function quoteOf(c: ItemContext, id: string): HTMLElement {
  const q = c.quoted(id);
  const who = q ? (q.from === c.me ? 'You' : q.from) : '';
  const text = !q ? 'Original message not loaded' : q.deleted ? DELETED_TEXT : q.kind === 'text' ? (q.body ?? '') : 'Message';
  const el = h(
    'button',
    { type: 'button', class: 'quote', 'aria-label': `Reply to ${who || 'a message'}: ${text.slice(0, 120)}` },
    who ? h('span', { class: 'quote-from' }, who) : null,
    h('span', { class: 'quote-text' }, text.slice(0, 200)),
  );
  el.addEventListener('click', () => c.onQuote(id));
  return el;
}

function reactionsOf(c: ItemContext, m: ChatMessage): HTMLElement | null {
  const entries = Object.entries(m.reactions ?? {}).filter(([, who]) => who.length > 0);
  if (entries.length === 0) return null;
  const group = h('div', { class: 'reactions', role: 'group', 'aria-label': 'Reactions' });
  for (const [emoji, who] of entries) {
    const mine = who.includes(c.me);
    const names = who.map((n) => (n === c.me ? 'you' : n)).join(', ');
    const b = h(
      'button',
      {
        type: 'button',
        class: mine ? 'reaction mine' : 'reaction',
        'aria-pressed': String(mine),
        'aria-label': `${emoji} ${who.length}`,
        title: `${emoji} by ${names}`,
      },
      `${emoji} ${who.length}`,
    );
    b.addEventListener('click', () => c.onReact(m, emoji));
    group.append(b);
  }
  return group;
}

const SVG = 'http://www.w3.org/2000/svg';

function svg(tag: string, attrs: Record<string, string>): SVGElement {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  return el;
}

/** The status icons: a clock (Sending), one tick in a ring (Sent), two (Delivered), two filled (Read). */
function statusIcon(words: string): SVGElement | null {
  const rings = words === 'Sent' || words === 'Sending' ? 1 : words === 'Delivered' || words === 'Read' ? 2 : 0;
  if (rings === 0) return null;
  const icon = svg('svg', {
    viewBox: `0 0 ${rings === 1 ? 14 : 24} 14`,
    class: `tick ${words.toLowerCase()}`,
    'aria-hidden': 'true',
    focusable: 'false',
  });
  for (let i = 0; i < rings; i++) {
    const x = 7 + i * 10;
    icon.append(svg('circle', { cx: String(x), cy: '7', r: '6' }));
    icon.append(svg('path', { d: words === 'Sending' ? `M${x} 3.5V7l2.5 1.5` : `M${x - 3} 7.2l2 2 4-4.2` }));
  }
  return icon;
}

/** The status element of one's own message; its words are its accessible name (and its tooltip). */
function statusEl(words: string): HTMLElement {
  const icon = statusIcon(words);
  const cls = words === 'Not sent' ? 'state wide failed' : words.startsWith('Waiting') ? 'state wide pending' : 'state';
  return h('span', { class: cls, role: 'status', 'aria-label': words, title: words }, icon ?? words);
}

/** The "Message actions" button, beside the bubble: shown on hover and focus, always on touch screens. */
function actionsButton(c: ItemContext, m: ChatMessage): HTMLButtonElement {
  const actions = h(
    'button',
    {
      type: 'button',
      class: 'actions',
      'aria-haspopup': 'menu',
      'aria-expanded': 'false',
      'aria-label': 'Message actions',
      title: 'Message actions',
    },
    '⋯',
  );
  actions.addEventListener('click', () => c.onActions(m, actions));
  return actions;
}

export function messageItem(c: ItemContext, m: ChatMessage): HTMLLIElement {
  const mine = m.from === c.me;
  const time = h('time', { datetime: new Date(m.ts).toISOString(), title: fullTime(m.ts) }, clockTime(m.ts));
  const meta = h('div', { class: 'meta' }, h('span', { class: 'from' }, mine ? `${m.from} (you)` : m.from), time);
  const li = h('li', { class: mine ? 'msg mine' : 'msg', 'data-id': m.id });
  if (m.kind === 'event') {
    li.className = 'msg event';
    li.append(h('p', { class: 'text' }, m.note ?? ''));
    return li;
  }
  if (m.kind !== 'text') {
    li.classList.add(m.kind === 'unknown' ? 'unknown' : 'undecryptable');
    li.append(meta, h('p', { class: 'text' }, m.note ?? 'This message could not be decrypted.'));
    return li;
  }
  li.append(meta);
  if (m.deleted) {
    li.classList.add('deleted');
    li.append(h('p', { class: 'text' }, DELETED_TEXT));
    return li;
  }
  if (m.replyTo) li.append(quoteOf(c, m.replyTo));
  const a = m.attachment;
  if (a) li.append(a.type === 'photo' ? photoView(c.file, m, a) : a.type === 'voice' ? voiceView(c.file, m, a) : fileView(c.file, m, a));
  if (!m.attachment || m.body) li.append(h('p', { class: 'text' }, ...linkify(m.body ?? '')));
  if (c.mentionsMe?.(m)) {
    li.classList.add('mentions-me');
    meta.append(h('span', { class: 'mention-tag' }, h('span', { 'aria-hidden': 'true' }, '@ '), 'Mentions you'));
  }
  const reactions = reactionsOf(c, m);
  if (reactions) li.append(reactions);
  const foot = h('div', { class: 'foot' });
  const left = m.expire ? c.expiresIn?.(m) : null;
  // A timer, not a live announcement: the log would otherwise read the countdown out as it changes.
  if (left)
    foot.append(h('span', { class: 'expiry', role: 'timer', 'aria-label': `Disappears in ${left}`, title: `Disappears in ${left}` }, `⏱ ${left}`));
  if (m.editedAt !== undefined) foot.append(h('span', { class: 'edited' }, '(edited)'));
  if (mine) {
    const words = c.status(m);
    foot.append(h('time', { datetime: new Date(m.ts).toISOString(), 'aria-hidden': 'true' }, clockTime(m.ts)), statusEl(words));
    if (words === 'Not sent') {
      if (m.note) foot.append(h('span', { class: 'hint' }, m.note));
      foot.append(h('button', { type: 'button', class: 'link', onclick: () => c.onRetry(m) }, 'Retry'));
    }
  }
  // The last line holds the text and the foot together when nothing comes after the text.
  if (foot.firstChild) {
    if (!reactions && (!m.attachment || m.body)) li.classList.add('inline-foot');
    li.append(foot);
  }
  li.append(actionsButton(c, m));
  return li;
}
