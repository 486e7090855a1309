/**
 * The connection status in the header (role status, so a change is announced): what the event
 * stream is doing, or "Offline" whenever the browser says it has no network, whatever the stream
 * last reported.
 */
import type { ConnectionState } from '@svc/sdk';
import type { Session } from '../app/session.js';
import { h } from './dom.js';

export const CONN_TEXT: Record<ConnectionState, string> = {
  connecting: 'Connecting…',
  replaying: 'Catching up…',
  live: 'Connected',
  offline: 'Offline',
  closed: 'Disconnected',
};

export function connStatus(s: Session): { el: HTMLElement; destroy(): void } {
  const el = h('span', { class: 'conn', role: 'status' });
  const render = () => {
    const state: ConnectionState = navigator.onLine ? s.conn : 'offline';
    if (el.textContent !== CONN_TEXT[state]) el.textContent = CONN_TEXT[state];
    el.classList.toggle('offline', state === 'offline' || state === 'closed');
  };
  render();
  const off = s.on('conn', render);
  window.addEventListener('online', render);
  window.addEventListener('offline', render);
  return {
    el,
    destroy() {
      off();
      window.removeEventListener('online', render);
      window.removeEventListener('offline', render);
    },
  };
}
