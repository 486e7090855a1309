/**
 * "Search messages": a search box over the decrypted history of every chat on this device, with
 * results in a list named "Search results"; choosing one opens its chat at that message. The index
 * lives in memory only (app/session.ts), so no search term or text is ever stored. Ctrl+K (⌘K on
 * a Mac) focuses the box from anywhere in the app.
 */
import type { SearchHit } from '@svc/sdk';
import { go } from '../app/route.js';
import type { Session } from '../app/session.js';
import { clear, h } from './dom.js';
import { shortTime } from './format.js';

export function searchView(s: Session, open: (hit: SearchHit) => void): HTMLElement {
  const input = h('input', {
    type: 'search',
    id: 'search-messages',
    autocomplete: 'off',
    placeholder: 'Search messages',
    'aria-controls': 'search-results',
  });
  const results = h('ul', { id: 'search-results', class: 'search-results', 'aria-label': 'Search results' });
  const status = h('p', { class: 'hint', role: 'status' });
  results.hidden = true;
  let seq = 0;

  async function run(): Promise<void> {
    const q = input.value.trim();
    const mine = ++seq;
    if (q === '') {
      clear(results);
      results.hidden = true;
      status.textContent = '';
      return;
    }
    const index = await s.searchIndex();
    if (mine !== seq) return;
    const hits = index.search(q, 50).filter((hit) => !s.isHidden(hit.chat));
    clear(results);
    results.hidden = false;
    status.textContent =
      hits.length === 0
        ? 'No messages found.'
        : `${hits.length === 50 ? 'The newest 50' : hits.length} ${hits.length === 1 ? 'message' : 'messages'} found.`;
    for (const hit of hits) {
      const where = hit.chat.startsWith('room:') ? (s.room(hit.chat.slice(5))?.name ?? 'a room') : hit.chat.slice(3);
      const who = hit.from === s.nick ? 'You' : hit.from;
      const b = h(
        'button',
        { type: 'button', class: 'hit' },
        h('span', { class: 'hit-where' }, `${where} · ${who} · ${shortTime(hit.ts)}`),
        h('span', { class: 'hit-text' }, hit.body.slice(0, 160)),
      );
      b.addEventListener('click', () => open(hit));
      results.append(h('li', {}, b));
    }
  }

  input.addEventListener('input', () => void run());
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && input.value) {
      e.preventDefault();
      input.value = '';
      void run();
    }
  });
  const shortcut = (e: KeyboardEvent) => {
    if (!input.isConnected) return document.removeEventListener('keydown', shortcut);
    if (e.key.toLowerCase() !== 'k' || !(e.ctrlKey || e.metaKey) || e.altKey || e.shiftKey) return;
    e.preventDefault();
    const focus = () => {
      input.focus();
      input.select();
    };
    // On a phone the open chat hides the chat list, and the box with it: back to the list first.
    if (input.offsetParent === null) {
      window.addEventListener('hashchange', () => requestAnimationFrame(focus), { once: true });
      go({ name: 'home' });
    } else focus();
  };
  // Removed with the session (a lock or a sign-out), so nothing on the document keeps it.
  queueMicrotask(() => document.addEventListener('keydown', shortcut, { signal: s.closedSignal }));
  // Changes to the history show in open results.
  s.on('change', () => {
    if (input.value.trim()) void run();
  });

  return h(
    'div',
    { class: 'search', role: 'search', 'aria-label': 'Message search' },
    h('label', { for: 'search-messages', class: 'sr-only' }, 'Search messages'),
    input,
    status,
    results,
  );
}
