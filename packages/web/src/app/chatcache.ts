/**
 * The chat list as last seen online, for an offline start: the contacts and rooms come from the
 * service (GET /api/contacts, /api/rooms), so without this copy an offline start would list only
 * the DMs that have local history. Kept in the account's IndexedDB (kv → `chatlist`), sealed
 * with the history key like every record there. Rooms are kept without their keys: they only name
 * the room in the list; the first `ready` online replaces them with the service's listing.
 */
import type { Contact, Room } from '@svc/protocol';
import { isTransferRoom, openAtRest, sealAtRest, type Sealed } from '@svc/sdk';
import type { ChatSummary } from './chats.js';
import { STORES } from './idb.js';
import type { Session } from './session.js';

const KEY = 'chatlist';
const CTX = 'kv|chatlist';

interface Snapshot {
  contacts: Contact[];
  rooms: Room[];
}

function isSnapshot(value: unknown): value is Snapshot {
  const snapshot = value as Partial<Snapshot> | null;
  return (
    typeof snapshot === 'object' &&
    snapshot !== null &&
    Array.isArray(snapshot.contacts) &&
    Array.isArray(snapshot.rooms) &&
    snapshot.contacts.every((c) => typeof c?.nick === 'string' && typeof c.publicKey === 'string' && typeof c.createdAt === 'number') &&
    snapshot.rooms.every(
      (r) => typeof r?.id === 'string' && typeof r.name === 'string' && Array.isArray(r.members) && typeof r.createdAt === 'number',
    )
  );
}

/** Puts the stored chat list back in the session (before the service is reached). */
export async function restoreChats(session: Session): Promise<void> {
  const sealed = await session.db.get<Sealed>(STORES.kv, KEY);
  if (!sealed) return;
  let snap: unknown;
  try {
    snap = await openAtRest(session.messenger.historyKey, sealed, CTX);
  } catch {
    return; // altered or of another account: the service's lists come soon enough
  }
  if (!isSnapshot(snap)) return;
  session.chats.setContacts(snap.contacts);
  for (const room of snap.rooms) if (!session.messenger.room(room.id)) await session.messenger.applyRoom({ ...room, keys: [], needsRekey: false });
}

function snapshotOf(session: Session, chats: ChatSummary[]): Snapshot {
  const contacts = chats
    .filter((c) => c.kind === 'dm')
    .map((c) => session.chats.contact(c.title))
    .filter((c): c is Contact => c !== undefined);
  // The private room of the account's devices is found again online when a transfer needs it.
  const rooms = session.messenger.rooms.filter((r) => !isTransferRoom(r, session.nick)).map((r) => ({ ...r, keys: [], needsRekey: false }));
  return { contacts, rooms };
}

/**
 * Stores the chat list whenever its contacts or rooms change while connected (then they are the
 * service's), not on every message: a new message changes neither. Writes go one after another,
 * so an older list never lands after a newer one. Returns the function that stops it.
 */
export function keepChats(session: Session): () => void {
  let last = '';
  let writes: Promise<void> = Promise.resolve();
  return session.on('chats', (chats) => {
    if (session.conn !== 'live') return;
    const snap = snapshotOf(session, chats);
    const text = JSON.stringify(snap);
    if (text === last) return;
    last = text;
    writes = writes
      .then(async () => session.db.put(STORES.kv, await sealAtRest(session.messenger.historyKey, snap, CTX), KEY))
      .catch((e: unknown) => console.warn('chat list not stored:', e));
  });
}
