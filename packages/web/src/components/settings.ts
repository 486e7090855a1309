/**
 * "Settings": password change, this account's devices (with remove), notifications on this
 * device, deleting the account. Each password field has its own label, distinct from the
 * sign-in screen's "Password".
 */
import type { Device } from '@svc/protocol';
import { changePassword, deleteAccount } from '../app/account.js';
import { describeError } from '../app/errors.js';
import { disablePush, enablePush, pushEnabled, pushSupported } from '../app/push.js';
import type { Session } from '../app/session.js';
import { confirmAction } from './confirm.js';
import { clear, field, h } from './dom.js';
import { fullTime } from './format.js';
import { progressView } from './progress.js';

export interface SettingsActions {
  onAccountDeleted: () => void;
  onThisDeviceRemoved: () => void;
}

function passwordSection(s: Session): HTMLElement {
  const current = field('Current password', { type: 'password', autocomplete: 'current-password', required: true });
  const next = field('New password', { type: 'password', autocomplete: 'new-password', required: true }, 'Your other devices are signed out and sign in again with the new password.');
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

function devicesSection(s: Session, a: SettingsActions): HTMLElement {
  const list = h('ul', { class: 'devices' });
  const status = h('p', { class: 'status', role: 'status' });
  const render = (devices: Device[]) => {
    clear(list);
    for (const d of devices) {
      const self = d.id === s.deviceId;
      const facts = [`added ${fullTime(d.createdAt)}`, d.lastSeenAt ? `last seen ${fullTime(d.lastSeenAt)}` : '', d.online ? 'online' : '', d.push ? 'notifications on' : ''].filter(Boolean).join(' · ');
      const remove = h('button', { type: 'button', class: 'danger', 'aria-label': self ? 'Remove this device' : `Remove device ${d.id}` }, 'Remove');
      remove.addEventListener('click', () => {
        remove.disabled = true;
        s.m.api
          .deleteDevice(d.id)
          .then(() => (self ? a.onThisDeviceRemoved() : load()))
          .catch((e: unknown) => {
            status.textContent = describeError(e);
            remove.disabled = false;
          });
      });
      list.append(h('li', {}, h('div', {}, h('strong', {}, self ? 'This browser' : 'Device'), ' ', h('code', {}, d.id), h('div', { class: 'hint' }, facts)), remove));
    }
  };
  const load = () =>
    s.m.api.devices().then(render, (e: unknown) => {
      status.textContent = describeError(e);
    });
  void load();
  return h('section', { 'aria-labelledby': 'dev-title' }, h('h3', { id: 'dev-title' }, 'Devices'), h('p', { class: 'hint' }, 'Every device has its own queue of messages. Remove a device you no longer use.'), list, status);
}

function notificationsSection(s: Session): HTMLElement {
  const box = h('input', { type: 'checkbox', id: 'notif-toggle' });
  const status = h('p', { class: 'status', role: 'status' });
  if (!pushSupported()) {
    box.disabled = true;
    status.textContent = 'This browser does not support push notifications.';
  } else {
    void pushEnabled().then((on) => (box.checked = on));
  }
  box.addEventListener('change', () => {
    const want = box.checked;
    box.disabled = true;
    status.classList.remove('error');
    status.textContent = want ? 'Turning notifications on…' : 'Turning notifications off…';
    (want ? enablePush(s) : disablePush(s))
      .then(() => (status.textContent = want ? 'Notifications are on for this device.' : 'Notifications are off for this device.'))
      .catch((e: unknown) => {
        box.checked = !want;
        status.textContent = describeError(e);
        status.classList.add('error');
      })
      .finally(() => (box.disabled = false));
  });
  return h(
    'section',
    { 'aria-labelledby': 'notif-title' },
    h('h3', { id: 'notif-title' }, 'Notifications'),
    h('div', { class: 'check' }, box, h('label', { for: 'notif-toggle' }, 'Notifications')),
    h('p', { class: 'hint' }, 'A notification says only who wrote (“@nick” or “#room”), never what. It comes when this device is not connected.'),
    status,
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
    h('p', { class: 'hint' }, `This deletes ${s.nick} for good: devices, queued messages, contacts and room memberships. The nick can never be used again. History kept in this browser is erased too.`),
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
      detail: 'The account, its devices, queued messages, contacts and room memberships are deleted, and the history in this browser is erased. The nick can never be used again.',
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
    devicesSection(s, a),
    deleteSection(s, a),
  );
}
