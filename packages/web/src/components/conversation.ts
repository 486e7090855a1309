/**
 * The open chat: header, key-change warning (role alert), room settings or safety number, the
 * message log (role log) and the composer (textbox "Message", Enter sends, Shift+Enter is a new
 * line). It listens to the session and keeps its own list of the chat's messages.
 */
import { describeError } from '../app/errors.js';
import type { Message } from '../app/history.js';
import { heldPeers, retry, send } from '../app/outbox.js';
import { splitChat } from '../app/route.js';
import type { Session } from '../app/session.js';
import { clear, h } from './dom.js';
import { dayKey, dayLabel } from './format.js';
import { messageItem } from './messages.js';
import { roomSettings } from './roomsettings.js';
import { keyChangeAlert, safetyPanel } from './safety.js';

export interface ConversationView {
  el: HTMLElement;
  destroy(): void;
}

export function conversationView(s: Session, chat: string): ConversationView {
  const { kind, id } = splitChat(chat);
  const title = h('h2', { id: 'conv-title' });
  const back = h('a', { href: '#/', class: 'back' }, '← Chats');
  const panelSlot = h('div');
  const alertSlot = h('div');
  const problem = h('p', { class: 'status error', role: 'status' });
  let panel: 'none' | 'settings' | 'safety' = 'none';
  const panelBtn = h('button', { type: 'button', 'aria-expanded': 'false' }, kind === 'room' ? 'Room settings' : 'Safety number');
  panelBtn.addEventListener('click', () => {
    panel = panel === 'none' ? (kind === 'room' ? 'settings' : 'safety') : 'none';
    renderPanel();
  });
  const head = h('div', { class: 'conv-head' }, back, title, panelBtn);

  const log = h('div', { class: 'log', role: 'log', 'aria-label': 'Messages', 'aria-live': 'polite', tabindex: '0' });
  const text = h('textarea', { id: 'composer-text', rows: '1', placeholder: 'Write a message', autocomplete: 'off' });
  const sendBtn = h('button', { type: 'submit', class: 'primary' }, 'Send');
  const composer = h('form', { class: 'composer', 'aria-label': 'Write a message' }, h('label', { for: 'composer-text', class: 'sr-only' }, 'Message'), text, sendBtn);
  const note = h('p', { class: 'composer-note hint' });
  note.hidden = true;

  const messages = new Map<string, Message>();

  function room() {
    return kind === 'room' ? s.m.room(id) : undefined;
  }

  function renderHead(): void {
    title.textContent = kind === 'room' ? (room()?.name ?? 'Room') : id;
  }

  function renderPanel(): void {
    clear(panelSlot);
    panelBtn.setAttribute('aria-expanded', String(panel !== 'none'));
    const r = room();
    if (panel === 'settings' && r) panelSlot.append(roomSettings(s, r));
    if (panel === 'safety') panelSlot.append(safetyPanel(s, id));
  }

  function renderTrust(): void {
    clear(alertSlot);
    const held = heldPeers(s, chat);
    for (const nick of held) {
      const showSafety = kind === 'dm' ? () => { panel = 'safety'; renderPanel(); } : null;
      alertSlot.append(keyChangeAlert(s, nick, showSafety, renderTrust));
    }
    const blocked = held.length > 0;
    sendBtn.disabled = blocked;
    note.hidden = !blocked;
    note.textContent = blocked ? 'Sending is held until you review the key change above.' : '';
  }

  function renderLog(): void {
    const atBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
    clear(log);
    const sorted = [...messages.values()].sort((a, b) => a.ts - b.ts || a.id.localeCompare(b.id));
    let day = '';
    for (const m of sorted) {
      const k = dayKey(m.ts);
      if (k !== day) {
        day = k;
        log.append(h('div', { class: 'day', 'aria-hidden': 'true' }, dayLabel(m.ts)));
      }
      log.append(messageItem(m, s.nick, (msg) => void retry(s, msg)));
    }
    if (sorted.length === 0) log.append(h('p', { class: 'empty' }, kind === 'room' ? 'No messages yet. Say hello to the room.' : `No messages yet. Say hello to ${id}.`));
    if (atBottom || sorted.length < 2) log.scrollTop = log.scrollHeight;
  }

  function submit(): void {
    const body = text.value;
    if (body.trim() === '' || sendBtn.disabled) return;
    if (heldPeers(s, chat).length > 0) return;
    text.value = '';
    problem.textContent = '';
    send(s, chat, body).catch((e: unknown) => (problem.textContent = describeError(e)));
  }
  composer.addEventListener('submit', (e) => {
    e.preventDefault();
    submit();
    text.focus();
  });
  text.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      submit();
    }
  });

  const offs = [
    s.on('message', (m) => {
      if (m.chat !== chat) return;
      messages.set(m.id, m);
      renderLog();
      if (m.from !== s.nick && s.isReading(chat)) void s.chats.markRead(chat).then(() => s.publishChats());
    }),
    s.on('removed', (mid) => {
      if (messages.delete(mid)) renderLog();
    }),
    s.on('trust', renderTrust),
    s.on('rooms', () => {
      renderHead();
      if (panel === 'settings') renderPanel();
      renderTrust();
    }),
  ];
  const onVisible = () => {
    if (document.visibilityState === 'visible') void s.chats.markRead(chat).then(() => s.publishChats());
  };
  document.addEventListener('visibilitychange', onVisible);

  renderHead();
  renderTrust();
  renderLog();
  void s.history.list(chat).then((list) => {
    for (const m of list) if (!messages.has(m.id)) messages.set(m.id, m);
    renderLog();
  });
  void s.chats.markRead(chat).then(() => s.publishChats());
  // A DM peer's key is checked (and pinned on first use) as soon as the chat opens.
  if (kind === 'dm') void s.m.peerKey(id, 'receive').catch(() => undefined);

  const el = h('section', { class: 'main', 'aria-labelledby': 'conv-title' }, head, alertSlot, panelSlot, problem, log, composer, note);
  return {
    el,
    destroy() {
      for (const off of offs) off();
      document.removeEventListener('visibilitychange', onVisible);
    },
  };
}
