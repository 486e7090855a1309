/**
 * The signed-in screen: a header (app name, connection state, "Settings", "Sign out"), the chat
 * list beside the open chat or the settings. At phone width only one of the two shows.
 */
import type { ConnectionState } from '@svc/sdk';
import { parseRoute, go, type Route } from '../app/route.js';
import type { EndReason, Session } from '../app/session.js';
import { chatListView } from './chatlist.js';
import { confirmAction } from './confirm.js';
import { conversationView, type ConversationView } from './conversation.js';
import { h } from './dom.js';
import { settingsView } from './settings.js';

const CONN_TEXT: Record<ConnectionState, string> = {
  connecting: 'Connecting…',
  replaying: 'Catching up…',
  live: 'Connected',
  offline: 'Offline, retrying…',
  closed: 'Disconnected',
};

export interface ShellOptions {
  onSignOut: () => void;
  onEnded: (reason: EndReason) => void;
}

export interface ShellView {
  el: HTMLElement;
  show(route: Route): void;
  destroy(): void;
}

export function shellView(s: Session, o: ShellOptions): ShellView {
  const conn = h('span', { class: 'conn', role: 'status' }, CONN_TEXT[s.conn]);
  const settingsBtn = h('button', { type: 'button' }, 'Settings');
  settingsBtn.addEventListener('click', () => go(parseRoute(location.hash).name === 'settings' ? { name: 'home' } : { name: 'settings' }));
  const signOutBtn = h('button', { type: 'button' }, 'Sign out');
  signOutBtn.addEventListener('click', () => {
    void confirmAction(signOutBtn, {
      question: 'Sign out?',
      detail: `This browser forgets the keys of ${s.nick}. Your messages stay here, encrypted, and open again when you sign in with your password.`,
      action: 'Sign out',
    }).then((yes) => yes && o.onSignOut());
  });
  const top = h(
    'header',
    { class: 'topbar' },
    h('h1', {}, h('img', { src: '/icon.svg', alt: '' }), h('span', {}, 'svc', h('span', { class: 'brand-long' }, ' messenger'))),
    conn,
    h('span', { class: 'sr-only' }, `Signed in as ${s.nick}`),
    settingsBtn,
    signOutBtn,
  );
  const list = chatListView(s);
  const mainSlot = h('div', { class: 'main', id: 'main' });
  const banner = h('p', { role: 'status', class: 'banner' });
  const shell = h('div', { class: 'shell' }, top, banner, h('div', { class: 'body' }, list.el, mainSlot));

  let conv: ConversationView | null = null;
  let current: Route = { name: 'home' };

  function currentChat(): string | null {
    return current.name === 'chat' ? current.chat : null;
  }

  function show(r: Route): void {
    current = r;
    conv?.destroy();
    conv = null;
    s.openChat = currentChat();
    shell.classList.toggle('has-main', r.name !== 'home');
    settingsBtn.setAttribute('aria-pressed', String(r.name === 'settings'));
    if (r.name === 'chat') {
      conv = conversationView(s, r.chat);
      swapMain(conv.el);
    } else if (r.name === 'settings') {
      swapMain(
        settingsView(s, {
          onAccountDeleted: () => o.onEnded('account_deleted'),
          onThisDeviceRemoved: () => o.onEnded('device_removed'),
        }),
      );
    } else {
      swapMain(h('section', { class: 'main' }, h('div', { class: 'placeholder' }, h('h2', {}, 'No chat open'), h('p', {}, 'Pick a chat from the list, or start one with “New chat” or “New room”.'))));
    }
    list.render(s.chats.list(), currentChat());
  }

  let mainEl: HTMLElement = mainSlot;
  function swapMain(el: HTMLElement): void {
    el.id = 'main';
    if (mainEl !== el) {
      if (mainEl.isConnected) mainEl.replaceWith(el);
      else shell.querySelector('.body')?.append(el);
    }
    mainEl = el;
  }

  const offs = [
    s.on('chats', (chats) => list.render(chats, currentChat())),
    s.on('conn', (state) => {
      conn.textContent = CONN_TEXT[state];
      conn.classList.toggle('offline', state === 'offline' || state === 'closed');
    }),
    s.on('gone', (chat) => {
      if (currentChat() === chat) {
        banner.textContent = 'That room is no longer available to you.';
        go({ name: 'home' });
      }
    }),
    s.on('ended', (reason) => o.onEnded(reason)),
    s.on('problem', (text) => {
      banner.textContent = text;
      setTimeout(() => {
        if (banner.textContent === text) banner.textContent = '';
      }, 10_000);
    }),
  ];

  return {
    el: shell,
    show,
    destroy() {
      conv?.destroy();
      for (const off of offs) off();
    },
  };
}
