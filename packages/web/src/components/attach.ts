/**
 * The composer's attachments before they are sent: the "Attach file" input (shown as a paperclip
 * button, a real file input so keyboards and screen readers reach it), files dropped onto the chat
 * and images pasted into the textbox. Each chosen file is listed with "Remove attachment"; the
 * typed text goes with them as the caption.
 */
import { clear, h, uid } from './dom.js';
import { fileSize } from './format.js';

export interface AttachTray {
  /** The paperclip control, placed in the composer's row. */
  control: HTMLElement;
  /** The list of chosen files, shown above the row while there are any. */
  list: HTMLElement;
  files(): File[];
  add(files: Iterable<File>): void;
  clear(): void;
}

export function attachTray(onChange: () => void): AttachTray {
  const id = uid('attach');
  const input = h('input', { type: 'file', id, multiple: true, class: 'sr-only attach-input', 'aria-label': 'Attach file' });
  const label = h('label', { for: id, class: 'attach-button', title: 'Attach file' }, paperclip(), h('span', { class: 'sr-only' }, 'Attach file'));
  const list = h('ul', { class: 'attach-list', 'aria-label': 'Attachments' });
  list.hidden = true;
  let chosen: File[] = [];

  function render(): void {
    clear(list);
    list.hidden = chosen.length === 0;
    for (const f of chosen) {
      const nameId = uid('attached');
      const remove = h('button', { type: 'button', class: 'link', 'aria-describedby': nameId }, 'Remove attachment');
      remove.addEventListener('click', () => {
        chosen = chosen.filter((x) => x !== f);
        render();
        onChange();
        input.focus();
      });
      list.append(
        h('li', {}, h('span', { class: 'attach-name', id: nameId }, f.name), ' ', h('span', { class: 'hint' }, fileSize(f.size)), ' ', remove),
      );
    }
  }

  const tray: AttachTray = {
    control: h('span', { class: 'attach' }, input, label),
    list,
    files: () => [...chosen],
    add(files) {
      const more = [...files];
      if (more.length === 0) return;
      chosen = [...chosen, ...more];
      render();
      onChange();
    },
    clear() {
      chosen = [];
      input.value = '';
      render();
      onChange();
    },
  };
  input.addEventListener('change', () => {
    tray.add(input.files ?? []);
    input.value = '';
  });
  return tray;
}

/** The paperclip drawn as SVG: no emoji font needed, and no markup from a string. */
function paperclip(): SVGSVGElement {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('width', '20');
  svg.setAttribute('height', '20');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('focusable', 'false');
  const path = document.createElementNS(ns, 'path');
  path.setAttribute('d', 'M21 11.5l-8.5 8.5a5 5 0 01-7-7L14 4.5a3.5 3.5 0 015 5L10.5 18a2 2 0 01-3-3L15 7.5');
  path.setAttribute('fill', 'none');
  path.setAttribute('stroke', 'currentColor');
  path.setAttribute('stroke-width', '2');
  path.setAttribute('stroke-linecap', 'round');
  svg.append(path);
  return svg;
}

/** A pasted image has no real name; it gets one from the time and its type. */
export function pastedName(f: File, now = new Date()): string {
  if (f.name && f.name !== 'image.png') return f.name;
  const ext = (f.type.split('/')[1] ?? 'png').replace(/[^a-z0-9]/g, '') || 'png';
  const stamp = now.toISOString().slice(0, 19).replace(/[:T]/g, '-');
  return `pasted-${stamp}.${ext}`;
}
