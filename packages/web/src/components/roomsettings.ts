/**
 * "Room settings": the members, and for the owner adding and removing them (each change brings a
 * new room key) and deleting the room; for everyone, leaving it. The owner and the members are
 * the room's membership record (what the room's own announcements said); a member the service
 * lists that nobody added, and a recorded one it no longer lists, are marked so.
 */
import type { Room } from '@svc/protocol';
import { describeError } from '../app/errors.js';
import { addMembers, deleteRoom, leaveRoom, removeMember } from '../app/rooms.js';
import { go } from '../app/route.js';
import type { Session } from '../app/session.js';
import { confirmAction, type ConfirmOptions } from './confirm.js';
import { field, h } from './dom.js';

export function roomSettings(s: Session, room: Room): HTMLElement {
  const record = s.roomMembership(room.id);
  const isOwner = s.ownsRoom(room.id);
  const owner = record.owner ?? room.owner;
  const status = h('p', { class: 'status', role: 'status' });
  const busy = (p: Promise<unknown>, done?: () => void) => {
    status.textContent = 'Working…';
    status.classList.remove('error');
    p.then(() => {
      status.textContent = '';
      done?.();
    }).catch((e: unknown) => {
      status.textContent = describeError(e);
      status.classList.add('error');
    });
  };

  const members = h('ul', { class: 'members' });
  // The record's members, then whom the service lists besides (the owner may remove them).
  const shown = record.recorded ? [...record.members.sort(), ...record.unannounced.sort()] : [];
  for (const nick of shown) {
    const label =
      nick === owner
        ? `${nick} (owner)`
        : record.unannounced.includes(nick)
          ? `${nick} (nobody added them)`
          : record.gone.includes(nick)
            ? `${nick} (the server no longer lists them)`
            : nick;
    const li = h('li', {}, nick === s.nick ? `${label} — you` : label);
    if (isOwner && nick !== s.nick) {
      const remove = h('button', { type: 'button', class: 'danger', 'aria-label': `Remove ${nick}` }, 'Remove');
      asking(
        remove,
        {
          question: `Remove ${nick}?`,
          detail: `${nick} leaves “${room.name}” and cannot read what is sent after. A new room key is made for the others.`,
          action: 'Remove member',
        },
        () => busy(removeMember(s, room.id, nick)),
      );
      li.append(remove);
    }
    members.append(li);
  }

  const parts: (Node | null)[] = [h('h3', {}, `Members (${record.members.length})`), members];
  if (!record.recorded)
    parts.push(h('p', { class: 'hint' }, 'This device does not know yet who was added to this room. It asks your other devices.'));
  if (isOwner) {
    const add = field(
      'Add people',
      { autocomplete: 'off', autocapitalize: 'none', spellcheck: 'false' },
      'Nicks separated by commas or spaces. A new room key is made for everyone.',
    );
    const form = h('form', { 'aria-label': 'Add people' }, add.wrap, h('button', { type: 'submit' }, 'Add'));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      busy(addMembers(s, room.id, add.input.value), () => (add.input.value = ''));
    });
    parts.push(form);
  } else {
    parts.push(h('p', { class: 'hint' }, `${owner} owns this room and manages its members.`));
  }
  if (record.ownerDisputed)
    parts.push(
      h(
        'p',
        { class: 'hint' },
        `The server names ${room.owner} as the owner, but nobody in the room handed it over; ${owner} owns it as far as this device knows.`,
      ),
    );
  const leave = h('button', { type: 'button' }, 'Leave room');
  const leaveDetail = isOwner ? 'The room passes to the member who joined earliest. ' : '';
  asking(
    leave,
    {
      question: `Leave “${room.name}”?`,
      detail: `${leaveDetail}You stop getting its messages, and its history is removed from this browser. Only the owner can add you again.`,
      action: 'Leave room',
    },
    () => busy(leaveRoom(s, room.id), () => go({ name: 'home' })),
  );
  const actions = h('div', { class: 'row' }, leave);
  if (isOwner) {
    const del = h('button', { type: 'button', class: 'danger' }, 'Delete room');
    asking(
      del,
      { question: `Delete “${room.name}”?`, detail: 'The room is gone for every member. This cannot be undone.', action: 'Delete room' },
      () => busy(deleteRoom(s, room.id), () => go({ name: 'home' })),
    );
    actions.append(del);
  }
  parts.push(actions, status);
  return h('section', { class: 'panel', 'aria-label': 'Room settings' }, ...parts);
}

/** Clicking `button` asks first; `run` runs only when the person confirms. */
function asking(button: HTMLButtonElement, o: ConfirmOptions, run: () => void): void {
  button.addEventListener('click', () => void confirmAction(button, o).then((yes) => yes && run()));
}
