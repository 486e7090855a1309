/**
 * The lock screen: only the password field, "Unlock" and "Sign out". It names no chat and no
 * account, and shows no text of any message; the app behind it holds no key until the password
 * opens it again (app/account.ts, unlock).
 */
import { isSdkError } from '@svc/sdk';
import { unlock, type Resumed } from '../app/account.js';
import { describeError } from '../app/errors.js';
import { field, h } from './dom.js';
import { progressView } from './progress.js';

export interface LockActions {
  onUnlocked(r: Resumed): void;
  onSignOut(): void;
}

export function lockView(a: LockActions): HTMLElement {
  const pw = field('Password', { type: 'password', autocomplete: 'current-password', required: true });
  const progress = progressView('Unlock progress');
  const unlockBtn = h('button', { type: 'submit', class: 'primary' }, 'Unlock');
  const signOutBtn = h('button', { type: 'button' }, 'Sign out');
  const form = h('form', { 'aria-labelledby': 'lock-title' }, pw.wrap, h('div', { class: 'row' }, unlockBtn, signOutBtn), progress.el);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    if (!pw.input.value) return progress.stop('Enter your password to unlock.');
    unlockBtn.disabled = true;
    progress.start();
    unlock(pw.input.value, progress.onStage)
      .then((r) => {
        pw.input.value = '';
        a.onUnlocked(r);
      })
      .catch((err: unknown) => {
        progress.stop(
          isSdkError(err, 'bad_identity')
            ? 'Wrong password. The app stays locked.'
            : isSdkError(err, 'network')
              ? 'The service cannot be reached, and unlocking needs it. Try again when online.'
              : describeError(err),
        );
        pw.input.select();
      })
      .finally(() => (unlockBtn.disabled = false));
  });
  signOutBtn.addEventListener('click', () => {
    signOutBtn.disabled = true;
    a.onSignOut();
  });
  queueMicrotask(() => pw.input.focus());
  return h(
    'main',
    { class: 'lock' },
    h('h1', { id: 'lock-title' }, 'Locked'),
    h('p', { class: 'hint' }, 'Enter your password to open the app again.'),
    form,
  );
}
