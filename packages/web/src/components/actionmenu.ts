/**
 * The "Message actions" menu of one message (role `menu`, items "Reply", "React", "Edit",
 * "Delete for everyone", "Pin" / "Unpin"), and the emoji picker that "React" opens (buttons named by the emoji).
 * Keyboard: arrows move between items, Escape closes and gives focus back to the button.
 */
import { h } from './dom.js';

export const EMOJI = ['👍', '❤️', '😂', '😮', '😢', '🙏'];

export interface MenuItem {
  label: string;
  run: () => void;
}

let openPopup: { el: HTMLElement; close: (refocus: boolean) => void } | null = null;

const closedListeners = new Set<() => void>();

/** Calls `f` after a menu or picker closed (a row kept as it was while one was open renders then). */
export function onPopupClosed(f: () => void): () => void {
  closedListeners.add(f);
  return () => closedListeners.delete(f);
}

/** Whether the open menu or picker sits inside `el`. */
export function popupIn(el: HTMLElement): boolean {
  return openPopup !== null && el.contains(openPopup.el);
}

/** Closes whichever menu or picker is open. */
export function closePopups(refocus = false): void {
  openPopup?.close(refocus);
}

function arrowKeys(el: HTMLElement, items: HTMLElement[], close: (refocus: boolean) => void): void {
  el.addEventListener('keydown', (e) => {
    const i = items.indexOf(document.activeElement as HTMLElement);
    if (e.key === 'Escape') {
      e.preventDefault();
      e.stopPropagation();
      close(true);
    } else if (e.key === 'ArrowDown' || e.key === 'ArrowRight') {
      e.preventDefault();
      items[(i + 1) % items.length]?.focus();
    } else if (e.key === 'ArrowUp' || e.key === 'ArrowLeft') {
      e.preventDefault();
      items[(i - 1 + items.length) % items.length]?.focus();
    } else if (e.key === 'Home') {
      e.preventDefault();
      items[0]?.focus();
    } else if (e.key === 'End') {
      e.preventDefault();
      items.at(-1)?.focus();
    } else if (e.key === 'Tab') {
      close(false);
    }
  });
}

/** Opens a popup after `anchor` (inside the same list item), closing any other. */
function show(anchor: HTMLButtonElement, el: HTMLElement, items: HTMLElement[]): void {
  closePopups();
  const close = (refocus: boolean) => {
    if (openPopup?.el !== el) return;
    openPopup = null;
    el.remove();
    anchor.setAttribute('aria-expanded', 'false');
    document.removeEventListener('pointerdown', outside, true);
    if (refocus && anchor.isConnected) anchor.focus();
    // After the click that closed it has run: "React" opens its picker in the same row first.
    queueMicrotask(() => {
      for (const f of closedListeners) f();
    });
  };
  const outside = (e: Event) => {
    if (!el.contains(e.target as Node) && e.target !== anchor) close(false);
  };
  arrowKeys(el, items, close);
  anchor.after(el);
  anchor.setAttribute('aria-expanded', 'true');
  openPopup = { el, close };
  document.addEventListener('pointerdown', outside, true);
  items[0]?.focus();
}

/** A menu after `anchor`: "Message actions" by default, or another (the chat header's "Mute"). */
export function openActionMenu(anchor: HTMLButtonElement, items: MenuItem[], label = 'Message actions'): void {
  if (anchor.getAttribute('aria-expanded') === 'true') return closePopups(true);
  const buttons = items.map((it) => {
    const b = h('button', { type: 'button', role: 'menuitem', tabindex: '-1' }, it.label);
    b.addEventListener('click', () => {
      closePopups(false);
      it.run();
    });
    return b;
  });
  show(anchor, h('div', { class: 'popup menu', role: 'menu', 'aria-label': label }, ...buttons), buttons);
}

export function openEmojiPicker(anchor: HTMLButtonElement, pick: (emoji: string) => void): void {
  const buttons = EMOJI.map((e) => {
    const b = h('button', { type: 'button', 'aria-label': e, class: 'emoji' }, e);
    b.addEventListener('click', () => {
      closePopups(true);
      pick(e);
    });
    return b;
  });
  show(anchor, h('div', { class: 'popup picker', role: 'group', 'aria-label': 'React' }, ...buttons), buttons);
}
