/**
 * Settings → "Devices": this account's devices, this one first as "This device", the others as
 * "Another device", each with when it was added ("Added <date>"), last seen, and whether it is
 * online or gets notifications. Device ids are random and mean nothing to a person, so they are
 * not shown. Each "Remove" button is named after its device ("Remove this device", "Remove the
 * device added <date>").
 */
import type { Device } from '@svc/protocol';
import { describeError } from '../app/errors.js';
import type { Session } from '../app/session.js';
import { clear, h } from './dom.js';
import { fullTime } from './format.js';

/** What the list shows for each device, in order; exported for its own sake (no DOM needed). */
export function describeDevices(devices: Device[], thisDevice: string): { device: Device; name: string; facts: string; removeLabel: string }[] {
  const sorted = [...devices].sort((a, b) => Number(b.id === thisDevice) - Number(a.id === thisDevice) || a.createdAt - b.createdAt);
  const used = new Map<string, number>();
  return sorted.map((d) => {
    const self = d.id === thisDevice;
    const added = fullTime(d.createdAt);
    let removeLabel = self ? 'Remove this device' : `Remove the device added ${added}`;
    // Two devices added in the same minute still get buttons with names of their own.
    const n = (used.get(removeLabel) ?? 0) + 1;
    used.set(removeLabel, n);
    if (n > 1) removeLabel += ` (${n})`;
    const facts = [
      `Added ${added}`,
      d.lastSeenAt ? `last seen ${fullTime(d.lastSeenAt)}` : '',
      d.online ? 'online' : '',
      d.push ? 'notifications on' : '',
    ]
      .filter(Boolean)
      .join(' · ');
    return { device: d, name: self ? 'This device' : 'Another device', facts, removeLabel };
  });
}

export function devicesSection(s: Session, onThisDeviceRemoved: () => void): HTMLElement {
  const list = h('ul', { class: 'devices' });
  const status = h('p', { class: 'status', role: 'status' });
  const render = (devices: Device[]) => {
    clear(list);
    for (const { device, name, facts, removeLabel } of describeDevices(devices, s.deviceId)) {
      const self = device.id === s.deviceId;
      const remove = h('button', { type: 'button', class: 'danger', 'aria-label': removeLabel }, 'Remove');
      remove.addEventListener('click', () => {
        remove.disabled = true;
        s.removeDevice(device.id)
          .then(() => (self ? onThisDeviceRemoved() : load()))
          .catch((e: unknown) => {
            status.textContent = describeError(e);
            remove.disabled = false;
          });
      });
      list.append(h('li', {}, h('div', {}, h('strong', {}, name), h('div', { class: 'hint' }, facts)), remove));
    }
  };
  const load = () =>
    s.devices().then(render, (e: unknown) => {
      status.textContent = describeError(e);
    });
  void load();
  return h(
    'section',
    { 'aria-labelledby': 'dev-title' },
    h('h3', { id: 'dev-title' }, 'Devices'),
    h('p', { class: 'hint' }, 'Every device has its own queue of messages. Remove a device you no longer use.'),
    list,
    status,
  );
}
