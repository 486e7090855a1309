/**
 * The warning a room shows (role alert) while the service lists a member that no announcement of
 * the room added: nobody's app makes a room key for that member (the SDK's membership record,
 * docs/CRYPTO.md "Membership record"). The owner is told how to decide.
 */
import type { Session } from '../app/session.js';
import { h } from './dom.js';

const UNANNOUNCED_TEXT = 'The server lists a member nobody added';

export function membershipAlert(s: Session, roomId: string): HTMLElement | null {
  const st = s.conv.membership.status(roomId);
  if (st.warned.length === 0) return null;
  const names = st.warned.join(', ');
  const owner = s.conv.membership.isOwner(roomId)
    ? ' No new room key is made while they stay listed: remove them in Room settings, or add them there if you mean to.'
    : ' The room’s owner can remove them.';
  return h(
    'div',
    { class: 'alert', role: 'alert' },
    h(
      'p',
      {},
      h('strong', {}, `${UNANNOUNCED_TEXT}: ${names}. `),
      `Nobody in the room announced adding ${names}, so no room key is made for them. This may mean that the service, or someone who controls it, is trying to listen in.${owner}`,
    ),
  );
}
