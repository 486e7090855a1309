/**
 * Settings → "Export and import history": "Export history" saves the history on this device as a file sealed
 * under the account's export key (the password alone opens it again, on any device), and "Import
 * history" merges such a file in without duplicates. The SDK builds and checks the file
 * (docs/CRYPTO.md); a file of another account or a damaged one is refused with
 * its clear error, and nothing changes. A single record that fails the check is left out, and
 * the status line says how many were. "Include photos and files" (on by default) puts the files
 * kept on this device that the history names into the file, and importing puts them back; off,
 * the file names them only (they open while the service still has them).
 */
import { describeError } from '../app/errors.js';
import type { Session } from '../app/session.js';
import { h, uid } from './dom.js';

/** `svc-history-<nick>-<YYYY-MM-DD>.svch`, in local time. */
export function exportFileName(nick: string, now = new Date()): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `svc-history-${nick}-${now.getFullYear()}-${p(now.getMonth() + 1)}-${p(now.getDate())}.svch`;
}

/** Hands the file's pieces to the browser as one download (a Blob URL and an <a download>, allowed by the CSP). */
function download(parts: Uint8Array[], name: string): void {
  const url = URL.createObjectURL(new Blob(parts as Uint8Array<ArrayBuffer>[], { type: 'application/octet-stream' }));
  const a = h('a', { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  // The download has its own copy once it started.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

const count = (n: number) => n.toLocaleString('en-US');
const withFiles = (n: number): string => (n === 0 ? '' : ` with ${count(n)} ${n === 1 ? 'file' : 'files'}`);

/** Records that failed the check are left out, not fatal; the person is told how many. */
export const leftOut = (n: number): string => (n === 0 ? '' : ` ${count(n)} ${n === 1 ? 'message was' : 'messages were'} damaged and left out.`);

export function historySection(s: Session): HTMLElement {
  const status = h('p', { class: 'status', role: 'status' });
  const alertSlot = h('div');
  const say = (text: string) => {
    alertSlot.replaceChildren();
    status.textContent = text;
  };
  const fail = (text: string) => {
    status.textContent = '';
    alertSlot.replaceChildren(h('p', { class: 'status error', role: 'alert' }, text));
  };

  const exportBtn = h('button', { type: 'button' }, 'Export history');
  const includeId = uid('inc');
  const include = h('input', { type: 'checkbox', id: includeId, checked: true });
  exportBtn.addEventListener('click', () => {
    exportBtn.disabled = true;
    say('Sealing the history…');
    s.history
      .exportFile(include.checked)
      .then((r) => {
        const name = exportFileName(s.nick);
        download(r.parts, name);
        say(`History saved as ${name}${withFiles(r.files)}.${leftOut(r.dropped)}`);
      })
      .catch((e: unknown) => fail(`The history could not be exported: ${describeError(e)}`))
      .finally(() => (exportBtn.disabled = false));
  });

  const fileId = uid('f');
  const file = h('input', { type: 'file', id: fileId, accept: '.svch,application/octet-stream' });
  const importBtn = h('button', { type: 'button' }, 'Import history');
  importBtn.addEventListener('click', () => {
    const f = file.files?.[0];
    if (!f) return fail('Choose a history file first.');
    importBtn.disabled = true;
    say('Importing…');
    // The file is read a piece at a time: one with photos and files can be large.
    s.history
      .importFile(f)
      .then((r) => {
        say(`Imported ${count(r.records)} messages (${count(r.added)} new)${withFiles(r.files)}.${leftOut(r.dropped)}`);
        file.value = '';
      })
      .catch((e: unknown) => fail(describeError(e)))
      .finally(() => (importBtn.disabled = false));
  });

  return h(
    'section',
    { 'aria-labelledby': 'history-title' },
    h('h3', { id: 'history-title' }, 'Export and import history'),
    h(
      'p',
      { class: 'hint' },
      'A file of the history on this device, sealed so that only this account opens it (with its password, on any device). Importing adds what is missing and duplicates nothing.',
    ),
    h('div', { class: 'row' }, exportBtn, include, h('label', { for: includeId }, 'Include photos and files')),
    h('div', { class: 'field' }, h('label', { for: fileId }, 'History file'), file),
    h('div', { class: 'row' }, importBtn),
    status,
    alertSlot,
  );
}
