/**
 * Moves an account's database of the old layout (legacy.ts: named by the nick, chat ids, times and
 * nicks in the clear) into the tagged one (idb.ts), on the first sign-in or resume that knows the
 * account's keys, then deletes the old one: every record, waiting action, outbox item, chat row,
 * pin and named value is opened with its old context and stored again under its tag.
 *
 * IndexedDB cannot rename a database, and the new name is a tag, so the move copies. Interrupted,
 * it starts over on the next sign-in (the tags are the same, so a row copied twice is one row);
 * the mark `moved` says the copy finished, so a copy is never repeated over newer writes once the
 * app has used the new database, even if deleting the old one failed.
 */
import { forTarget, type Messenger } from '@svc/sdk';
import { metaRow } from './chats.js';
import { STORES, deleteDatabase, type Db } from './idb.js';
import { legacyChats, legacyDbName, legacyKv, legacyMessages, legacyOutbox, legacyPending, legacyPins, openLegacy, type Skipped } from './legacy.js';
import { IdbConversationStore } from './conversation-store.js';
import { Tags } from './tags.js';
import { pinRow } from './trust.js';

const MOVED = 'moved';
/** Records read, sealed and written per transaction. */
const PAGE = 500;

/** Returns how many records were moved, or null when there was no old database. */
export async function moveLegacy(messenger: Messenger, db: Db): Promise<number | null> {
  const old = await openLegacy(messenger.nick);
  if (!old) return null;
  let moved = 0;
  try {
    if ((await db.get(STORES.kv, MOVED)) === undefined) {
      moved = await copy(old, messenger, db);
      await db.put(STORES.kv, true, MOVED);
    }
  } finally {
    old.close();
  }
  if ((await deleteDatabase(legacyDbName(messenger.nick))) === 'deleted') await db.delete(STORES.kv, MOVED);
  return moved;
}

async function copy(old: IDBDatabase, messenger: Messenger, db: Db): Promise<number> {
  const key = messenger.historyKey;
  const tags = new Tags(messenger.indexKey);
  const store = new IdbConversationStore(db, key, tags);
  const skipped: Skipped = { count: 0 };
  let records = 0;
  for await (const page of legacyMessages(old, key, PAGE, skipped)) {
    await db.putAll(STORES.messages, await Promise.all(page.map((r) => store.messageRow(r))));
    records += page.length;
  }
  const pending = await legacyPending(old, key, skipped);
  // Old rows held a whole receipt each: each keeps only what its target needs, and waits from now.
  const now = messenger.api.now();
  await db.putAll(STORES.pending, await Promise.all(pending.map((p) => store.pendingRow({ ...p, plain: forTarget(p.plain, p.target), at: now }))));
  const outbox = await legacyOutbox(old, key, skipped);
  await db.putAll(STORES.outbox, await Promise.all(outbox.map((item) => store.outboxRow(item))));
  const chats = await legacyChats(old, key, skipped);
  await db.putAll(STORES.chats, await Promise.all(chats.map((c) => metaRow(key, tags, c))));
  const pins = await legacyPins(old, key, skipped);
  await db.putAll(STORES.pins, await Promise.all(pins.map(([nick, pin]) => pinRow(key, tags, nick, pin))));
  const kv = await legacyKv(old, key, skipped);
  for (const [name, value] of kv.meta) await store.putMeta(name, value);
  for (const [name, value] of kv.asIs) await db.put(STORES.kv, value, name);
  if (skipped.count > 0) console.warn(`${skipped.count} stored rows did not open and were left behind`);
  return records;
}
