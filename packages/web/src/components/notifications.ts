/**
 * Settings → "Notifications": the switch for this device. Turning it on can fail or time out
 * (push.ts gives up after PUSH_TIMEOUT_MS); then the error says so, the switch is usable again
 * and "Try again" repeats the attempt.
 */
import { describeError } from '../app/errors.js';
import { disablePush, enablePush, pushEnabled, pushSupported } from '../app/push.js';
import type { Session } from '../app/session.js';
import { h } from './dom.js';

export function notificationsSection(s: Session): HTMLElement {
  const box = h('input', { type: 'checkbox', id: 'notif-toggle' });
  const status = h('p', { class: 'status', role: 'status' });
  const retry = h('button', { type: 'button', hidden: true }, 'Try again');
  if (!pushSupported()) {
    box.disabled = true;
    status.textContent = 'This browser does not support push notifications.';
  } else {
    void pushEnabled().then((on) => (box.checked = on));
  }

  const run = (want: boolean) => {
    box.checked = want;
    box.disabled = true;
    retry.hidden = true;
    status.classList.remove('error');
    status.textContent = want ? 'Turning notifications on…' : 'Turning notifications off…';
    (want ? enablePush(s) : disablePush(s))
      .then(() => (status.textContent = want ? 'Notifications are on for this device.' : 'Notifications are off for this device.'))
      .catch((e: unknown) => {
        box.checked = !want;
        status.textContent = describeError(e);
        status.classList.add('error');
        retry.hidden = false;
        retry.onclick = () => run(want);
      })
      .finally(() => (box.disabled = false));
  };
  box.addEventListener('change', () => run(box.checked));

  return h(
    'section',
    { 'aria-labelledby': 'notif-title' },
    h('h3', { id: 'notif-title' }, 'Notifications'),
    h('div', { class: 'check' }, box, h('label', { for: 'notif-toggle' }, 'Notifications')),
    h('p', { class: 'hint' }, 'A notification says only who wrote (“@nick” or “#room”), never what. It comes when this device is not connected.'),
    status,
    retry,
  );
}
