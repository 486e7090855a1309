/**
 * "Settings": password change, this account's devices (with remove), notifications on this
 * device, the history file (export and import), deleting the account. Each password field has its own label, distinct from the
 * sign-in screen's "Password".
 */
import { changePassword, deleteAccount } from '../app/account.js';
import { describeError } from '../app/errors.js';
import { LOCK_CHOICES, lockAfter, setLockAfter } from '../app/lock.js';
import type { Session } from '../app/session.js';
import { confirmAction } from './confirm.js';
import { devicesSection } from './devices.js';
import { field, h } from './dom.js';
import { historySection } from './history.js';
import { notificationsSection } from './notifications.js';
import { progressView } from './progress.js';

export interface SettingsActions {
  onLock: () => void;
  onAccountDeleted: () => void;
  onThisDeviceRemoved: () => void;
}

function passwordSection(s: Session): HTMLElement {
  const current = field('Current password', { type: 'password', autocomplete: 'current-password', required: true });
  const next = field(
    'New password',
    { type: 'password', autocomplete: 'new-password', required: true },
    'Your other devices are signed out and sign in again with the new password.',
  );
  const progress = progressView('Password change progress');
  const btn = h('button', { type: 'submit', class: 'primary' }, 'Change password');
  // The hidden nick lets password managers file the new password under the right account.
  const user = h('input', { type: 'text', autocomplete: 'username', value: s.nick, hidden: true, tabindex: '-1' });
  const form = h('form', { 'aria-labelledby': 'pw-title' }, h('h3', { id: 'pw-title' }, 'Password'), user, current.wrap, next.wrap, btn, progress.el);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    if (!current.input.value || !next.input.value) return progress.stop('Fill in both passwords.');
    btn.disabled = true;
    progress.start();
    changePassword(s, current.input.value, next.input.value, progress.onStage)
      .then(() => {
        current.input.value = '';
        next.input.value = '';
        progress.stop();
        progress.onStage('done');
      })
      .catch((err: unknown) => progress.stop(describeError(err)))
      .finally(() => (btn.disabled = false));
  });
  return h('section', {}, form);
}

/** "App lock": "Lock after" (remembered on this device) and "Lock now". */
function lockSection(a: SettingsActions): HTMLElement {
  const id = 'lock-after';
  const select = h('select', { id, 'aria-describedby': 'lock-after-hint' });
  for (const c of LOCK_CHOICES) select.append(h('option', { value: String(c.ms) }, c.label));
  select.value = String(lockAfter());
  select.addEventListener('change', () => setLockAfter(Number(select.value)));
  const now = h('button', { type: 'button' }, 'Lock now');
  now.addEventListener('click', () => a.onLock());
  return h(
    'section',
    { 'aria-labelledby': 'applock-title' },
    h('h3', { id: 'applock-title' }, 'App lock'),
    h(
      'div',
      { class: 'field' },
      h('label', { for: id }, 'Lock after'),
      select,
      h(
        'p',
        { class: 'hint', id: 'lock-after-hint' },
        'After this long without using this device, the app locks: it forgets its keys and hides your chats until you enter your password.',
      ),
    ),
    now,
  );
}

function deleteSection(s: Session, a: SettingsActions): HTMLElement {
  const pw = field('Password to confirm', { type: 'password', autocomplete: 'current-password', required: true });
  const progress = progressView('Account deletion progress');
  const btn = h('button', { type: 'submit', class: 'danger' }, 'Delete account');
  const form = h(
    'form',
    { 'aria-labelledby': 'del-title' },
    h('h3', { id: 'del-title' }, 'Delete account'),
    h('input', { type: 'text', autocomplete: 'username', value: s.nick, hidden: true, tabindex: '-1' }),
    h(
      'p',
      { class: 'hint' },
      `This deletes ${s.nick} for good: devices, queued messages, contacts and room memberships. The nick can never be used again. History kept in this browser is erased too.`,
    ),
    pw.wrap,
    btn,
    progress.el,
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    if (!pw.input.value) return progress.stop('Enter your password to confirm.');
    progress.stop();
    void confirmAction(btn, {
      question: `Delete ${s.nick} for good?`,
      detail:
        'The account, its devices, queued messages, contacts and room memberships are deleted, and the history in this browser is erased. The nick can never be used again.',
      action: 'Delete account',
    }).then((yes) => yes && run(pw.input.value));
  });
  const run = (password: string) => {
    btn.disabled = true;
    progress.start();
    deleteAccount(s, password, progress.onStage).then(
      () => a.onAccountDeleted(),
      (err: unknown) => {
        btn.disabled = false;
        progress.stop(describeError(err));
      },
    );
  };
  return h('section', {}, form);
}

export function settingsView(s: Session, a: SettingsActions): HTMLElement {
  return h(
    'section',
    { class: 'main settings', 'aria-labelledby': 'settings-title' },
    h('h2', { id: 'settings-title' }, 'Settings'),
    h('p', {}, 'Signed in as ', h('strong', {}, s.nick), '.'),
    passwordSection(s),
    notificationsSection(s),
    lockSection(a),
    devicesSection(s, a.onThisDeviceRemoved),
    historySection(s),
    deleteSection(s, a),
  );
}
