/**
 * The history transfer between this account's devices, as the shell shows it (docs/WEB.md,
 * "History on every device"):
 *
 * - a new device of the account asks for the history: a dialog "New device signed in" with
 *   "Send history" (the transfer starts) and "Not now" (nothing is sent; Escape is the same);
 * - while a transfer runs, on both devices, a progress bar named "History transfer" with the
 *   count of messages in words ("Received 300 of 1,000 messages", the files that come with them,
 *   and how many were left out as damaged), gone a few seconds after the receiving device holds
 *   everything; a transfer refused on the way (a damaged archive) says why there instead.
 */
import type { TransferProgress, TransferRequest } from '@svc/sdk';
import { describeError } from '../app/errors.js';
import type { Session } from '../app/session.js';
import { h, uid } from './dom.js';

/** How long the finished bar stays, so its last count can be read. */
export const DONE_SHOWN_MS = 6_000;

const count = (n: number) => n.toLocaleString('en-US');

/**
 * "Received 300 of 1,000 messages" / "Sent 300 of 1,000 messages", the files kept on the sending
 * device that travel with them ("and 2 of 5 files"), and how many messages were left out as
 * damaged; or why the transfer stopped.
 */
export function progressText(p: Pick<TransferProgress, 'role' | 'records' | 'dropped' | 'files' | 'error'>): string {
  if (p.error) return p.error;
  let line = `${p.role === 'receive' ? 'Received' : 'Sent'} ${count(p.records.done)} of ${count(p.records.total)} messages`;
  if (p.files) line += ` and ${count(p.files.done)} of ${count(p.files.total)} ${p.files.total === 1 ? 'file' : 'files'}`;
  return p.dropped > 0 ? `${line} (${count(p.dropped)} damaged, left out)` : line;
}

export interface TransferView {
  el: HTMLElement;
  destroy(): void;
}

/** The progress of the transfer that matters most here: one being received, else one being sent. */
export function transferStatus(s: Session): TransferView {
  // The visual bar; the element with the role carries the numbers for assistive technology.
  const visual = h('progress', { 'aria-hidden': 'true', max: '1', value: '0' });
  const bar = h(
    'div',
    { role: 'progressbar', 'aria-label': 'History transfer', 'aria-valuemin': '0', 'aria-valuemax': '0', 'aria-valuenow': '0' },
    visual,
  );
  const text = h('p', { class: 'transfer-text', role: 'status' });
  const el = h('div', { class: 'transfer' }, bar, text);
  el.hidden = true;
  const shown = new Map<string, TransferProgress>();
  let hideTimer: ReturnType<typeof setTimeout> | null = null;

  function render(): void {
    const all = [...shown.values()];
    const p = all.find((x) => x.role === 'receive' && x.state === 'active') ?? all.find((x) => x.state === 'active') ?? all.at(-1);
    if (!p) {
      el.hidden = true;
      return;
    }
    const { done, total } = p.records;
    bar.setAttribute('aria-valuemax', String(total));
    bar.setAttribute('aria-valuenow', String(Math.min(done, total)));
    bar.setAttribute('aria-valuetext', progressText(p));
    visual.max = Math.max(total, 1);
    visual.value = Math.min(done, total);
    const line = progressText(p);
    if (text.textContent !== line) text.textContent = line;
    el.hidden = false;
  }

  const off = s.on('transfer', (e) => {
    if (e.type !== 'progress') return;
    const p = e.progress;
    shown.set(p.transfer, p);
    if (hideTimer) clearTimeout(hideTimer);
    hideTimer = null;
    if ([...shown.values()].every((x) => x.state === 'done' || x.error)) {
      hideTimer = setTimeout(() => {
        shown.clear();
        render();
      }, DONE_SHOWN_MS);
    }
    render();
  });
  return {
    el,
    destroy() {
      off();
      if (hideTimer) clearTimeout(hideTimer);
    },
  };
}

/**
 * Asks the person, one request at a time, whether to send the history to a new device. The
 * request comes unbidden, maybe while the person types, so the dialog is not modal and takes no
 * focus (a key meant for the composer must not answer it): it sits in the header, in flow, and
 * its container is a live region that reads it out when it appears.
 */
export function transferRequests(s: Session): TransferView {
  const el = h('div', { class: 'device-asks', 'aria-live': 'polite' });
  const asked = new Set<string>();
  const queue: TransferRequest[] = [];
  let open: HTMLDialogElement | null = null;

  function next(): void {
    if (open) return;
    const r = queue.shift();
    if (!r) return;
    const titleId = uid('dlg-title');
    const detailId = uid('dlg-detail');
    const later = h('button', { type: 'button' }, 'Not now');
    const send = h('button', { type: 'button', class: 'primary' }, 'Send history');
    const dialog = h(
      'dialog',
      { class: 'device-ask', 'aria-labelledby': titleId, 'aria-describedby': detailId },
      h('h2', { id: titleId }, 'New device signed in'),
      h(
        'p',
        { id: detailId },
        `Another device just signed in to ${s.nick}. Send it the history of your chats from this device? It travels end to end encrypted between your own devices; the service sees only its size.`,
      ),
      h('div', { class: 'row actions' }, later, send),
    );
    let choice: 'send' | 'later' = 'later';
    later.addEventListener('click', () => dialog.close());
    send.addEventListener('click', () => {
      choice = 'send';
      dialog.close();
    });
    // Escape inside it is "Not now" too.
    dialog.addEventListener('keydown', (e) => {
      if (e.key !== 'Escape') return;
      e.preventDefault();
      dialog.close();
    });
    dialog.addEventListener('close', () => {
      const hadFocus = dialog.contains(document.activeElement);
      dialog.remove();
      open = null;
      asked.delete(r.device);
      const act = s.history.answerRequest(r.device, choice === 'send' ? 'send' : 'decline');
      act.catch((e: unknown) => s.reportProblem(`History transfer: ${describeError(e)}`));
      if (hadFocus) document.getElementById('main')?.focus();
      next();
    });
    el.append(dialog);
    open = dialog;
    // A question that comes by itself, while the person may be typing or in a menu: shown without
    // taking the focus (show() would move it into the dialog); the live region announces it.
    const had = document.activeElement;
    dialog.show();
    if (had instanceof HTMLElement && had !== document.body && had.isConnected) had.focus();
  }

  const off = s.on('transfer', (e) => {
    if (e.type !== 'request' || asked.has(e.request.device)) return;
    asked.add(e.request.device);
    queue.push(e.request);
    next();
  });
  return { el, destroy: off };
}
