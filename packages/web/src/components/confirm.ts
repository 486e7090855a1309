/**
 * Asking before an action that cannot be taken back (sign out, leave a room, remove a member,
 * delete the account or a room), so no mistake is one key or one click away.
 *
 * A native modal <dialog> (showModal): the rest of the page is inert while it is open, Escape
 * closes it, and its accessible name is its heading. Focus starts on "Cancel", so the key that
 * opened it (Space or Enter on the button, possibly repeating) can never also confirm; the
 * confirming button repeats the action's name, so it says what it does. However the dialog
 * closes, focus goes back to the button that opened it.
 */
import { h, uid } from './dom.js';

export interface ConfirmOptions {
  /** The question, shown as the dialog's heading and accessible name ("Remove carol?"). */
  question: string;
  /** What follows if confirmed, in a sentence or two. */
  detail: string;
  /** The confirming button's label: exactly the action's name ("Remove member"). */
  action: string;
}

/** Resolves true when the person confirms, false on "Cancel" or Escape. */
export function confirmAction(opener: HTMLElement, o: ConfirmOptions): Promise<boolean> {
  const titleId = uid('dlg-title');
  const detailId = uid('dlg-detail');
  const cancel = h('button', { type: 'button' }, 'Cancel');
  const confirm = h('button', { type: 'button', class: 'danger' }, o.action);
  const dialog = h(
    'dialog',
    { class: 'confirm', 'aria-labelledby': titleId, 'aria-describedby': detailId },
    h('h2', { id: titleId }, o.question),
    h('p', { id: detailId }, o.detail),
    h('div', { class: 'row actions' }, cancel, confirm),
  );
  document.body.append(dialog);
  return new Promise((resolve) => {
    let confirmed = false;
    cancel.addEventListener('click', () => dialog.close());
    confirm.addEventListener('click', () => {
      confirmed = true;
      dialog.close();
    });
    // Escape fires "cancel" and then "close"; every way out ends here.
    dialog.addEventListener('close', () => {
      dialog.remove();
      if (opener.isConnected) opener.focus();
      resolve(confirmed);
    });
    dialog.showModal();
    cancel.focus();
  });
}
