/**
 * An attachment inside its message: the file's name and size, and "Download <name>", which fetches
 * it through the SDK (every part checked against the message) and saves the exact bytes. While
 * one's own file goes up, a progress bar "Uploading <name>"; while a file over 1 MB comes down,
 * "Downloading <name>". A file the service no longer holds says "File no longer available".
 */
import { isSdkError, type ChatMessage } from '@svc/sdk';
import { describeError } from '../app/errors.js';
import { h } from './dom.js';
import { fileSize } from './format.js';

type Ref = NonNullable<ChatMessage['attachment']>;

export interface FileContext {
  /** Upload progress of one's own message, as a fraction, or null when not uploading. */
  uploaded(messageId: string): number | null;
  /** Registers the bar that shows an upload's progress, replaced when the row re-renders. */
  watchUpload(messageId: string, bar: HTMLProgressElement): void;
  /** The file's bytes, checked; `onProgress` as a fraction. */
  fetch(m: ChatMessage, onProgress: (f: number) => void): Promise<Uint8Array>;
  /** The file as a data: URL, downloaded once and kept. */
  dataUrl(m: ChatMessage): Promise<string>;
  /** A same-origin URL that plays the recording for as long as `el` is in the document (app/media.ts). */
  mediaUrl(m: ChatMessage, el: HTMLMediaElement): Promise<string>;
}

const SHOW_DOWNLOAD_BAR = 1_000_000;

export const GONE_TEXT = 'File no longer available';

/** Saves bytes as a file named `name`: a link with `download`, clicked and let go. */
export function saveBytes(bytes: Uint8Array, name: string, mime: string): void {
  const url = URL.createObjectURL(new Blob([bytes as BlobPart], { type: mime || 'application/octet-stream' }));
  const a = h('a', { href: url, download: name, class: 'sr-only' });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

function bar(label: string): HTMLProgressElement {
  return h('progress', { max: '1', value: '0', 'aria-label': label });
}

export function fileView(c: FileContext, m: ChatMessage, ref: Ref): HTMLElement {
  const status = h('span', { class: 'hint file-status', 'aria-live': 'polite' });
  const download = h('button', { type: 'button', class: 'file-download' }, `Download ${ref.name}`);
  const box = h(
    'div',
    { class: 'file' },
    h('span', { class: 'file-name' }, ref.name),
    h('span', { class: 'hint file-size' }, fileSize(ref.plainSize)),
    download,
    status,
  );
  if (c.uploaded(m.id) !== null) {
    const up = bar(`Uploading ${ref.name}`);
    up.value = c.uploaded(m.id) ?? 0;
    c.watchUpload(m.id, up);
    box.append(up);
  }
  download.addEventListener('click', () => {
    download.disabled = true;
    status.textContent = '';
    const down = ref.plainSize > SHOW_DOWNLOAD_BAR ? bar(`Downloading ${ref.name}`) : null;
    if (down) box.append(down);
    c.fetch(m, (f) => down && (down.value = f))
      .then((bytes) => saveBytes(bytes, ref.name, ref.mime))
      .catch((e: unknown) => {
        status.textContent = isSdkError(e, 'unknown_attachment') ? GONE_TEXT : describeError(e);
      })
      .finally(() => {
        down?.remove();
        download.disabled = false;
      });
  });
  return box;
}
