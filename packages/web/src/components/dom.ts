/**
 * A tiny element builder: components describe elements with attributes and children, and never
 * touch innerHTML with data, so a nick, a room name or a message can never become markup.
 * Style is only ever set through classes (the CSP forbids inline style attributes).
 */

type Child = Node | string | null | undefined | false;
type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') {
      el.addEventListener(k.slice(2), v);
    } else if (k === 'class') {
      el.className = String(v);
    } else if (v === true) {
      el.setAttribute(k, '');
    } else {
      el.setAttribute(k, String(v));
    }
  }
  append(el, children);
  return el;
}

export function append(el: Element, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === 'string' ? document.createTextNode(c) : c);
  }
}

export function clear(el: Element): void {
  while (el.firstChild) el.removeChild(el.firstChild);
}

let idCounter = 0;
/** A unique element id for label/aria wiring. */
export function uid(prefix: string): string {
  idCounter += 1;
  return `${prefix}-${idCounter}`;
}

/** A labelled text input inside a `.field` wrapper; the label text is its accessible name. */
export function field(label: string, input: Attrs & { type?: string }, hint?: string): { wrap: HTMLDivElement; input: HTMLInputElement } {
  const id = uid('f');
  const hintId = hint ? uid('hint') : null;
  const el = h('input', { type: 'text', id, 'aria-describedby': hintId, ...input });
  const wrap = h('div', { class: 'field' }, h('label', { for: id }, label), el, hint ? h('p', { class: 'hint', id: hintId }, hint) : null);
  return { wrap, input: el };
}
