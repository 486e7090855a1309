/**
 * A photo inside its message: an image named by its file name, shown at once from the thumbnail
 * the message carries and in full once downloaded (as a data: URL, which the page's CSP allows
 * for images, unlike blob:). Clicking it, or Enter, opens the dialog "Photo" with the full image
 * and "Download".
 */
import { isSdkError, type ChatMessage } from '@svc/sdk';
import { describeError } from '../app/errors.js';
import { h } from './dom.js';
import { GONE_TEXT, saveBytes, type FileContext } from './fileview.js';

type Ref = NonNullable<ChatMessage['attachment']>;

export function photoView(c: FileContext, m: ChatMessage, ref: Ref): HTMLElement {
  const img = h('img', { class: 'photo', alt: ref.name, tabindex: '0', src: ref.thumb ?? null });
  if (ref.width && ref.height) {
    img.width = Math.min(ref.width, 280);
    img.height = Math.round((img.width * ref.height) / ref.width);
  }
  const status = h('span', { class: 'hint file-status', 'aria-live': 'polite' });
  const box = h('div', { class: 'file photo-box' }, img, status);
  const fail = (e: unknown) => (status.textContent = isSdkError(e, 'unknown_attachment') ? GONE_TEXT : describeError(e));
  if (c.uploaded(m.id) === null) {
    void c
      .dataUrl(m)
      .then((url) => (img.src = url))
      .catch(fail);
  }
  const open = () => void openPhoto(c, m, ref, img).catch(fail);
  img.addEventListener('click', open);
  img.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      open();
    }
  });
  return box;
}

async function openPhoto(c: FileContext, m: ChatMessage, ref: Ref, from: HTMLElement): Promise<void> {
  const full = h('img', { class: 'photo-full', alt: ref.name, src: ref.thumb ?? null });
  const download = h('button', { type: 'button', class: 'primary' }, 'Download');
  const close = h('button', { type: 'button' }, 'Close');
  const dialog = h('dialog', { class: 'photo-dialog', 'aria-label': 'Photo' }, full, h('div', { class: 'actions-row' }, download, close));
  document.body.append(dialog);
  // The photo goes with its message: deleted for everyone, expired, or its chat left.
  const gone = setInterval(() => {
    if (!from.isConnected) dialog.close();
  }, 500);
  dialog.addEventListener('close', () => {
    clearInterval(gone);
    dialog.remove();
    if (from.isConnected) from.focus();
  });
  close.addEventListener('click', () => dialog.close());
  download.addEventListener('click', () => {
    download.disabled = true;
    void c
      .fetch(m, () => undefined)
      .then((bytes) => saveBytes(bytes, ref.name, ref.mime))
      .finally(() => (download.disabled = false));
  });
  dialog.showModal();
  full.src = await c.dataUrl(m);
}
