/**
 * The warning a room shows (role alert) while its membership record and the service's list
 * disagree (the SDK's membership record, docs/CRYPTO.md): the service lists a
 * member that no announcement of the room added (nobody's app makes a room key for that member,
 * and nothing is sent to the room), or no longer lists a recorded member that nobody announced
 * leaving. A device that holds no record yet says so. The owner is told how to decide.
 */
import { isTransferRoom } from '@svc/sdk';
import type { Session } from '../app/session.js';
import { h } from './dom.js';

const UNANNOUNCED_TEXT = 'The server lists a member nobody added';
const GONE_TEXT = 'The server no longer lists a member nobody removed';
const NO_RECORD_TEXT = 'This device does not know yet who is in this room';

export function membershipAlert(s: Session, roomId: string): HTMLElement | null {
  const st = s.roomMembership(roomId);
  const listed = s.room(roomId);
  const lines: HTMLElement[] = [];
  if (listed && st.missing && !isTransferRoom(listed, s.nick))
    lines.push(
      h(
        'p',
        {},
        h('strong', {}, `${NO_RECORD_TEXT}. `),
        'It makes no room key and sends nothing here until one of your other devices sends it the room’s membership, or the owner announces the next change. Open the app on another device of yours.',
      ),
    );
  if (st.warned.length > 0) {
    const names = st.warned.join(', ');
    const owner = s.ownsRoom(roomId)
      ? ' No new room key is made and nothing is sent while they stay listed: remove them in Room settings, or add them there if you mean to.'
      : ' Nothing is sent to the room while they stay listed. The room’s owner can remove them.';
    lines.push(
      h(
        'p',
        {},
        h('strong', {}, `${UNANNOUNCED_TEXT}: ${names}. `),
        `Nobody in the room announced adding ${names}, so no room key is made for them. This may mean that the service, or someone who controls it, is trying to listen in.${owner}`,
      ),
    );
  }
  if (st.goneWarned.length > 0) {
    const names = st.goneWarned.join(', ');
    lines.push(
      h(
        'p',
        {},
        h('strong', {}, `${GONE_TEXT}: ${names}. `),
        `Nobody in the room announced that ${names} left or was removed, so they still count as members here. The service may be hiding them; the owner’s next change settles it.`,
      ),
    );
  }
  return lines.length > 0 ? h('div', { class: 'alert', role: 'alert' }, ...lines) : null;
}
