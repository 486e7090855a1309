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

function isSnapshot(v: unknown): v is Snapshot {
  const o = v as Partial<Snapshot> | null;
  return (
    typeof o === 'object' &&
    o !== null &&
    Array.isArray(o.contacts) &&
    Array.isArray(o.rooms) &&
    o.contacts.every((c) => typeof c?.nick === 'string' && typeof c.publicKey === 'string' && typeof c.createdAt === 'number') &&
    o.rooms.every((r) => typeof r?.id === 'string' && typeof r.name === 'string' && Array.isArray(r.members) && typeof r.createdAt === 'number')
  );
}

/** Puts the stored chat list back in the session (before the service is reached). */
export async function restoreChats(s: Session): Promise<void> {
  const sealed = await s.db.get<Sealed>(STORES.kv, KEY);
  if (!sealed) return;
  let snap: unknown;
  try {
    snap = await openAtRest(s.m.historyKey, sealed, CTX);
  } catch {
    return; // altered or of another account: the service's lists come soon enough
  }
  if (!isSnapshot(snap)) return;
  s.chats.setContacts(snap.contacts);
  for (const r of snap.rooms) if (!s.m.room(r.id)) await s.m.applyRoom({ ...r, keys: [], needsRekey: false });
}

function snapshotOf(s: Session, chats: ChatSummary[]): Snapshot {
  const contacts = chats
    .filter((c) => c.kind === 'dm')
    .map((c) => s.chats.contact(c.title))
    .filter((c): c is Contact => c !== undefined);
  // The private room of the account's devices is found again online when a transfer needs it.
  const rooms = s.m.rooms.filter((r) => !isTransferRoom(r, s.nick)).map((r) => ({ ...r, keys: [], needsRekey: false }));
  return { contacts, rooms };
}

/**
 * Stores the chat list whenever its contacts or rooms change while connected (then they are the
 * service's), not on every message: a new message changes neither. Writes go one after another,
 * so an older list never lands after a newer one. Returns the function that stops it.
 */
export function keepChats(s: Session): () => void {
  let last = '';
  let writes: Promise<void> = Promise.resolve();
  return s.on('chats', (chats) => {
    if (s.conn !== 'live') return;
    const snap = snapshotOf(s, chats);
    const text = JSON.stringify(snap);
    if (text === last) return;
    last = text;
    writes = writes
      .then(async () => s.db.put(STORES.kv, await sealAtRest(s.m.historyKey, snap, CTX), KEY))
      .catch((e: unknown) => console.warn('chat list not stored:', e));
  });
}
