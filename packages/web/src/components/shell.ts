/**
 * The signed-in screen: a header (app name, connection state, "Settings", "Sign out", and a
 * banner line for notices), the chat list beside the `main` landmark that holds the open chat or
 * the settings. At phone width only one of the two shows.
 */
import type { ChatId } from '@svc/sdk';
import { parseRoute, go, type Route } from '../app/route.js';
import type { EndReason, Session } from '../app/session.js';
import { chatListView } from './chatlist.js';
import { confirmAction } from './confirm.js';
import { connStatus } from './connstatus.js';
import { conversationView, type ConversationView } from './conversation.js';
import { h } from './dom.js';
import { settingsView } from './settings.js';
import { transferRequests, transferStatus } from './transfer.js';

export interface ShellOptions {
  onSignOut: () => void;
  onLock: () => void;
  onEnded: (reason: EndReason) => void;
}

export interface ShellView {
  el: HTMLElement;
  show(route: Route): void;
  destroy(): void;
}

export function shellView(s: Session, o: ShellOptions): ShellView {
  const conn = connStatus(s);
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
  const bar = h(
    'div',
    { class: 'topbar' },
    h('h1', {}, h('img', { src: '/icon.svg', alt: '' }), h('span', {}, 'svc', h('span', { class: 'brand-long' }, ' messenger'))),
    conn.el,
    h('span', { class: 'sr-only' }, `Signed in as ${s.nick}`),
    settingsBtn,
    signOutBtn,
  );
  /** A search result to scroll to once its chat is open. */
  let revealNext: string | null = null;
  const list = chatListView(s, (hit) => {
    if (currentChat() === hit.chat && conv) return conv.reveal(hit.id);
    revealNext = hit.id;
    go({ name: 'chat', chat: hit.chat });
  });
  // Every screen has one `main` landmark; the open chat or the settings go inside it.
  const mainSlot = h('main', { class: 'content', id: 'main', tabindex: '-1' });
  const banner = h('p', { role: 'status', class: 'banner' });
  const transfer = transferStatus(s);
  const asks = transferRequests(s);
  const shell = h('div', { class: 'shell' }, h('header', {}, bar, banner, transfer.el, asks.el), h('div', { class: 'body' }, list.el, mainSlot));

  let conv: ConversationView | null = null;
  let current: Route = { name: 'home' };

  function currentChat(): string | null {
    return current.name === 'chat' ? current.chat : null;
  }

  function show(r: Route): void {
    current = r;
    conv?.destroy();
    conv = null;
    s.chatOnScreen(currentChat());
    shell.classList.toggle('has-main', r.name !== 'home');
    settingsBtn.setAttribute('aria-pressed', String(r.name === 'settings'));
    if (r.name === 'chat') {
      conv = conversationView(s, r.chat as ChatId);
      swapMain(conv.el);
      if (revealNext) conv.reveal(revealNext);
      revealNext = null;
    } else if (r.name === 'settings') {
      swapMain(
        settingsView(s, {
          onLock: o.onLock,
          onAccountDeleted: () => o.onEnded('account_deleted'),
          onThisDeviceRemoved: () => o.onEnded('device_removed'),
        }),
      );
    } else {
      swapMain(
        h(
          'section',
          { class: 'main' },
          h(
            'div',
            { class: 'placeholder' },
            h('h2', {}, 'No chat open'),
            h('p', {}, 'Pick a chat from the list, or start one with “New chat” or “New room”.'),
          ),
        ),
      );
    }
    list.render(s.summaries(), currentChat());
  }

  function swapMain(el: HTMLElement): void {
    mainSlot.replaceChildren(el);
  }

  const offs = [
    s.on('chats', (chats) => list.render(chats, currentChat())),
    () => conn.destroy(),
    () => transfer.destroy(),
    () => asks.destroy(),
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
