/**
 * The sidebar: "New chat" and "New room" forms and the chat list, a navigation landmark named
 * "Chats" whose links are named exactly by the peer's nick or the room's name (time, unread
 * count, "Verified" / "Safety number changed" and "Muted" are aria-hidden and given as the link's
 * description instead).
 */
import type { ChatSummary } from '../app/chats.js';
import { describeError } from '../app/errors.js';
import { createRoom } from '../app/rooms.js';
import { go, routeHash } from '../app/route.js';
import type { Session } from '../app/session.js';
import { addContact } from '../app/contacts.js';
import { clear, field, h, uid } from './dom.js';
import { shortTime, fullTime } from './format.js';
import { searchView } from './search.js';
import type { SearchHit } from '@svc/sdk';

export interface ChatListView {
  el: HTMLElement;
  render(chats: ChatSummary[], current: string | null): void;
}

function newChatForm(s: Session, close: () => void): HTMLFormElement {
  const nick = field(
    'Nick',
    { autocomplete: 'off', autocapitalize: 'none', spellcheck: 'false', required: true },
    'The nick of the person to write to.',
  );
  const status = h('p', { class: 'error', role: 'status' });
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Start chat');
  const form = h(
    'form',
    { 'aria-label': 'New chat' },
    nick.wrap,
    h('div', { class: 'row' }, submit, h('button', { type: 'button', onclick: close }, 'Cancel')),
    status,
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    status.textContent = '';
    submit.disabled = true;
    addContact(s, nick.input.value)
      .then((chat) => {
        close();
        go({ name: 'chat', chat });
      })
      .catch((err: unknown) => {
        status.textContent = describeError(err);
        nick.input.focus();
      })
      .finally(() => (submit.disabled = false));
  });
  queueMicrotask(() => nick.input.focus());
  return form;
}

function newRoomForm(s: Session, close: () => void): HTMLFormElement {
  const name = field('Room name', { autocomplete: 'off', required: true, maxlength: 64 });
  const members = field(
    'Members',
    { autocomplete: 'off', autocapitalize: 'none', spellcheck: 'false' },
    'Nicks separated by commas or spaces. You can add more later.',
  );
  const status = h('p', { class: 'error', role: 'status' });
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Create room');
  const form = h(
    'form',
    { 'aria-label': 'New room' },
    name.wrap,
    members.wrap,
    h('div', { class: 'row' }, submit, h('button', { type: 'button', onclick: close }, 'Cancel')),
    status,
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    status.textContent = '';
    submit.disabled = true;
    createRoom(s, name.input.value, members.input.value)
      .then((room) => {
        close();
        go({ name: 'chat', chat: `room:${room.id}` });
      })
      .catch((err: unknown) => {
        status.textContent = describeError(err);
      })
      .finally(() => (submit.disabled = false));
  });
  queueMicrotask(() => name.input.focus());
  return form;
}

/** A DM's key state, shown beside the entry and read as part of its description (not its name). */
function trustLabel(c: ChatSummary): { text: string; class: string } | undefined {
  if (c.keyChanged) return { text: 'Safety number changed', class: 'trust-tag changed' };
  if (c.verified) return { text: 'Verified', class: 'trust-tag verified' };
  return undefined;
}

function entry(c: ChatSummary): HTMLLIElement {
  const descId = uid('chatdesc');
  const when = c.lastTs > 0 ? shortTime(c.lastTs) : '';
  const trust = trustLabel(c);
  const desc = [
    c.kind === 'room' ? 'Room' : 'Direct chat',
    c.closed,
    trust?.text,
    c.muted ? 'Muted' : '',
    c.unread > 0 ? `${c.unread} unread` : '',
    c.mentioned ? 'Mentioned' : '',
    c.draft ?? (c.preview ? `last message ${c.preview}` : ''),
    c.lastTs > 0 ? `last activity ${fullTime(c.lastTs)}` : '',
  ]
    .filter(Boolean)
    .join(', ');
  const link = h(
    'a',
    {
      href: routeHash({ name: 'chat', chat: c.chat }),
      'aria-describedby': descId,
      'data-chat': c.chat,
    },
    h('span', { class: c.kind === 'room' ? 'avatar room' : 'avatar', 'aria-hidden': 'true' }, c.kind === 'room' ? '#' : c.title.slice(0, 1)),
    h(
      'span',
      { class: 'chat-text' },
      h('span', { class: 'chat-name' }, c.title),
      c.closed ? h('span', { class: 'chat-preview', 'aria-hidden': 'true' }, c.closed) : null,
      // A draft takes the place of the last message.
      !c.closed && c.draft ? h('span', { class: 'chat-preview draft', 'aria-hidden': 'true' }, c.draft) : null,
      !c.closed && !c.draft && c.preview ? h('span', { class: 'chat-preview', 'aria-hidden': 'true' }, c.preview) : null,
    ),
    h(
      'span',
      { class: 'chat-meta', 'aria-hidden': 'true' },
      h('span', {}, when),
      c.unread > 0 ? h('span', { class: 'badge' }, String(c.unread)) : null,
      c.mentioned ? h('span', { class: 'mention-tag' }, 'Mentioned') : null,
      trust ? h('span', { class: trust.class }, trust.text) : null,
      c.muted ? h('span', { class: 'mute-tag' }, 'Muted') : null,
    ),
  );
  return h('li', {}, link, h('span', { id: descId, hidden: true }, desc));
}

export function chatListView(s: Session, openHit: (hit: SearchHit) => void): ChatListView {
  const formSlot = h('div');
  const newChatBtn = h('button', { type: 'button', 'aria-expanded': 'false' }, 'New chat');
  const newRoomBtn = h('button', { type: 'button', 'aria-expanded': 'false' }, 'New room');
  const closeForms = () => {
    clear(formSlot);
    newChatBtn.setAttribute('aria-expanded', 'false');
    newRoomBtn.setAttribute('aria-expanded', 'false');
  };
  const toggle = (btn: HTMLButtonElement, make: () => HTMLFormElement) => {
    const open = btn.getAttribute('aria-expanded') === 'true';
    closeForms();
    if (!open) {
      // The open chat closes, so its composer cannot take what is meant for the new chat.
      go({ name: 'home' });
      formSlot.append(make());
      btn.setAttribute('aria-expanded', 'true');
    }
  };
  newChatBtn.addEventListener('click', () =>
    toggle(newChatBtn, () =>
      newChatForm(s, () => {
        closeForms();
        newChatBtn.focus();
      }),
    ),
  );
  newRoomBtn.addEventListener('click', () =>
    toggle(newRoomBtn, () =>
      newRoomForm(s, () => {
        closeForms();
        newRoomBtn.focus();
      }),
    ),
  );

  const list = h('ul');
  const empty = h('p', { class: 'empty' }, 'No chats yet. Start one with “New chat” or “New room”.');
  const nav = h('nav', { 'aria-label': 'Chats', class: 'chats' }, list, empty);
  const el = h('aside', { class: 'sidebar' }, h('div', { class: 'sidebar-actions' }, newChatBtn, newRoomBtn), formSlot, searchView(s, openHit), nav);

  /**
   * Each drawn entry by chat, with what it was drawn from: a render draws again only the entries
   * whose summary (or the day-relative time it shows) changed, and moves the others into order,
   * since the list renders on every message and every opening of a chat, and drawing a couple of
   * hundred entries anew each time (and laying them out) made both slow.
   */
  const drawn = new Map<string, { li: HTMLLIElement; link: HTMLAnchorElement; sig: string }>();

  return {
    el,
    render(chats, current) {
      // Keyboard focus stays on the same entry, drawn again or moved (a move takes the focus away).
      const focused = document.activeElement as HTMLElement | null;
      const focusedChat = focused && list.contains(focused) ? focused.dataset.chat : undefined;
      const keep = new Set<string>();
      let at: ChildNode | null = list.firstChild;
      for (const c of chats) {
        keep.add(c.chat);
        const sig = `${c.lastTs > 0 ? shortTime(c.lastTs) : ''}|${JSON.stringify(c)}`;
        let e = drawn.get(c.chat);
        if (!e || e.sig !== sig) {
          const li = entry(c);
          const next = { li, link: li.firstElementChild as HTMLAnchorElement, sig };
          if (e) {
            e.li.replaceWith(li);
            if (at === e.li) at = li;
          }
          drawn.set(c.chat, (e = next));
        }
        const isCurrent = c.chat === current;
        if (e.link.hasAttribute('aria-current') !== isCurrent) {
          if (isCurrent) e.link.setAttribute('aria-current', 'page');
          else e.link.removeAttribute('aria-current');
        }
        if (at === e.li) at = at.nextSibling;
        else list.insertBefore(e.li, at);
      }
      for (const [chat, e] of drawn)
        if (!keep.has(chat)) {
          e.li.remove();
          drawn.delete(chat);
        }
      const refocus = focusedChat === undefined ? undefined : drawn.get(focusedChat)?.link;
      if (refocus && document.activeElement !== refocus) refocus.focus();
      empty.hidden = chats.length > 0;
    },
  };
}
