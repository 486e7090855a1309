/**
 * Nothing this browser stores says who chats with whom, in which chats, when or how much
 * (docs/CRYPTO.md §8, "What IndexedDB shows"): read raw, IndexedDB and localStorage hold no nick, no chat id,
 * no message text, no timestamp and no message id (a ULID carries its time), in any database
 * name, key, index key or value. While signed in, the saved session (kv `identity`) holds the nick
 * it resumes; signing out removes it, and then nothing names the account.
 *
 * A database of the old layout (version 2, named by the nick, chat ids and times in the clear) is
 * moved at the next sign-in: every message, waiting action, outbox item, chat row and pin is still
 * there, and the old database is gone.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import {
  ApiClient,
  atRestTag,
  cookieFetch,
  KDF_MIN,
  Messenger,
  newMid,
  sealAtRest,
  type ChatMessage,
  type OutboxItem,
  type PendingAction,
  type Sealed,
} from '@svc/sdk';
import { missingBrowser, type Device } from './harness/browser.js';
import { roomState } from './harness/db.js';
import { nick, openScene, type Scene } from './harness/scene.js';
import { clearFound, dumpStorage, type StorageDump } from './harness/storage.js';
import {
  button,
  chatEntry,
  createRoom,
  KDF_PATIENCE,
  nickInput,
  openChat,
  seeMessage,
  send,
  signedOut,
  signIn,
  signUp,
  startChat,
  statusShows,
} from './harness/ui.js';
import { until } from './harness/wait.js';

/** Every place of the dump where something of `needles` (or a time, or a message id) shows. */
function leaks(dump: StorageDump, needles: string[], skip: (db: string, store: string, key: unknown) => boolean = () => false): string[] {
  const out: string[] = [];
  const say = (where: string, v: unknown) => {
    const found = clearFound(v, needles);
    if (found.length > 0) out.push(`${where}: ${found.join(', ')}`);
  };
  for (const db of dump.databases) {
    say(`database name ${db.name}`, db.name);
    for (const store of db.stores) {
      for (const row of store.rows) {
        if (skip(db.name, store.name, row.key)) continue;
        say(`${db.name}/${store.name} key ${JSON.stringify(row.key)}`, row.key);
        say(`${db.name}/${store.name} value of ${JSON.stringify(row.key)}`, row.value);
      }
      for (const idx of store.indexes) say(`${db.name}/${store.name} index ${idx.name}`, idx.keys);
    }
  }
  for (const [key, value] of Object.entries(dump.localStorage)) {
    say(`localStorage key ${key}`, key);
    say(`localStorage value of ${key}`, value);
  }
  return out;
}

function store(dump: StorageDump, db: string, name: string) {
  const found = dump.databases.find((d) => d.name === db)?.stores.find((s) => s.name === name);
  assert.ok(found, `${db} has a store ${name}`);
  return found;
}

/** The accessible description of a chat-list entry ("Direct chat, Verified, 2 unread, …"), read in the entry's own tree (the list redraws often). */
function entryDescription(page: Page, name: string): Promise<string> {
  return chatEntry(page, name).evaluate((el) => {
    const id = el.getAttribute('aria-describedby');
    return (id && el.parentElement?.querySelector(`[id="${id}"]`)?.textContent) || '';
  });
}

/** Waits until the entry's description matches `re`; fails with the last one seen. */
async function described(page: Page, name: string, re: RegExp): Promise<void> {
  let last = '';
  try {
    await until(`the entry ${name} described as ${re}`, async () => {
      last = await entryDescription(page, name);
      return re.test(last) ? true : undefined;
    });
  } catch (e) {
    assert.fail(`${name}: "${last}" does not match ${re} (${String(e)})`);
  }
}

async function signOut(page: Page): Promise<void> {
  await button(page, 'Sign out').click();
  await page.getByRole('dialog').getByRole('button', { name: 'Sign out', exact: true }).click();
  await signedOut(page);
}

interface LegacyRows {
  kv: { key: string; value: unknown }[];
  messages: { id: string; chat: string; ts: number; mid?: string; sealed: Sealed }[];
  chats: unknown[];
  pins: { nick: string; sealed: Sealed }[];
  pending: { id: string; target: string; sealed: Sealed }[];
  outbox: { id: string; sealed: Sealed }[];
}

/**
 * Writes a database as version 2 of the app laid it out, and its localStorage entries, from the
 * page. `sessionFrom`: a database of this version whose saved session moves into the old one,
 * and which is then deleted, as if this browser had been signed in with version 2.
 */
async function writeLegacy(page: Page, account: string, rows: LegacyRows, local: Record<string, string>, sessionFrom?: string): Promise<void> {
  await page.evaluate(
    async ({ account, rows, local, sessionFrom }) => {
      const opened = (req: IDBOpenDBRequest) =>
        new Promise<IDBDatabase>((resolve, reject) => {
          req.onsuccess = () => resolve(req.result);
          req.onerror = () => reject(req.error ?? new Error('IndexedDB request failed'));
        });
      let session: unknown;
      if (sessionFrom) {
        const current = await opened(indexedDB.open(sessionFrom));
        const get = current.transaction('kv').objectStore('kv').get('identity');
        session = await new Promise((resolve, reject) => {
          get.onsuccess = () => resolve(get.result);
          get.onerror = () => reject(get.error ?? new Error('IndexedDB request failed'));
        });
        current.close();
        if (!session) throw new Error(`no saved session in ${sessionFrom}`);
        const del = indexedDB.deleteDatabase(sessionFrom);
        await new Promise((resolve, reject) => {
          del.onsuccess = resolve;
          del.onerror = () => reject(del.error ?? new Error('IndexedDB delete failed'));
        });
      }
      const req = indexedDB.open(`svc:${account}`, 2);
      req.onupgradeneeded = () => {
        const db = req.result;
        db.createObjectStore('kv');
        const messages = db.createObjectStore('messages', { keyPath: 'id' });
        messages.createIndex('chat_ts', ['chat', 'ts']);
        messages.createIndex('mid', 'mid');
        db.createObjectStore('chats', { keyPath: 'chat' });
        db.createObjectStore('pins', { keyPath: 'nick' });
        db.createObjectStore('pending', { keyPath: 'id' }).createIndex('target', 'target');
        db.createObjectStore('outbox', { keyPath: 'id' });
      };
      const db = await opened(req);
      const tx = db.transaction(['kv', 'messages', 'chats', 'pins', 'pending', 'outbox'], 'readwrite');
      for (const { key, value } of rows.kv) tx.objectStore('kv').put(value, key);
      if (session) tx.objectStore('kv').put(session, 'identity');
      for (const name of ['messages', 'chats', 'pins', 'pending', 'outbox'] as const) for (const row of rows[name]) tx.objectStore(name).put(row);
      await new Promise<void>((resolve, reject) => {
        tx.oncomplete = () => resolve();
        tx.onerror = () => reject(tx.error ?? new Error('IndexedDB transaction failed'));
      });
      db.close();
      for (const [key, value] of Object.entries(local)) localStorage.setItem(key, value);
    },
    { account, rows, local, sessionFrom },
  );
}

describe('web client: nothing about chats, nicks or times in the browser’s storage in the clear', { skip: missingBrowser() }, () => {
  let scene: Scene;
  /** The account whose old database the second test moved, for the third. */
  let moved:
    | {
        d: Device;
        carol: Messenger;
        names: { carol: string; dave: string };
        roomName: string;
        texts: Record<'fromDave' | 'mine' | 'v1' | 'room1' | 'room2' | 'queued', string>;
        rows: LegacyRows;
        queuedId: string;
      }
    | undefined;

  before(async () => {
    scene = await openScene();
  });
  after(async () => {
    await scene?.close();
  });

  test('after a DM and a room, no nick, chat id, text, time or message id in any database name, key, index key or value; signed out, not even the saved session', async () => {
    await scene.step(async () => {
      const password = 'storage at rest password';
      const names = { alice: nick('alice'), bob: nick('bob') };
      const room = `Rest ${randomBytes(3).toString('hex')}`;
      const [alice, bob]: [Device, Device] = await Promise.all([scene.device('alice'), scene.device('bob')]);
      await Promise.all([signUp(alice.page, names.alice, password), signUp(bob.page, names.bob, password)]);

      await startChat(alice.page, names.bob);
      const dm = scene.text('dm at rest');
      await send(alice.page, dm);
      await openChat(bob.page, names.alice);
      await seeMessage(bob.page, dm);
      const reply = scene.text('reply at rest');
      await send(bob.page, reply);
      await seeMessage(alice.page, reply);
      await createRoom(alice.page, room, [names.bob]);
      const inRoom = scene.text('room at rest');
      await send(alice.page, inRoom);
      // Alice reads the room while Bob writes in the DM: the DM's unread count is stored.
      const unread = scene.text('unread at rest');
      await openChat(bob.page, names.alice);
      await send(bob.page, unread);
      await described(alice.page, names.bob, /1 unread/);

      const roomId = roomState(scene.server.dbPath, room)?.id;
      assert.ok(roomId);
      const needles = [names.alice, names.bob, 'dm:', 'room:', roomId, room, dm, reply, inRoom, unread];
      const signedIn = await dumpStorage(alice.page);
      const account = signedIn.localStorage['svc.account'];
      assert.ok(account && /^svc-[A-Za-z0-9_-]{22}$/.test(account), `svc.account names the database by a tag: ${account}`);
      assert.deepEqual(
        signedIn.databases.map((d) => d.name),
        [account],
      );
      const isSession = (db: string, s: string, key: unknown) => db === account && s === 'kv' && key === 'identity';
      assert.deepEqual(leaks(signedIn, needles, isSession), []);
      // The only exception while signed in: the saved session, which must name the account to resume it.
      const saved = store(signedIn, account, 'kv').rows.find((r) => r.key === 'identity');
      assert.equal((saved?.value as { nick?: string } | undefined)?.nick, names.alice);
      // The rows are there, found by tags: three messages and a line of each chat at least.
      const messages = store(signedIn, account, 'messages');
      assert.ok(messages.rows.length >= 4, `${messages.rows.length} message rows`);
      for (const row of messages.rows) {
        const v = row.value as Record<string, unknown>;
        assert.ok(typeof v.k === 'string' && typeof v.c === 'string' && typeof v.o === 'number' && typeof v.sealed === 'object', JSON.stringify(v));
      }
      assert.equal(store(signedIn, account, 'chats').rows.length, 2);
      assert.ok(store(signedIn, account, 'pins').rows.length >= 1);

      await signOut(alice.page);
      const signedOutDump = await dumpStorage(alice.page);
      assert.deepEqual(leaks(signedOutDump, needles), []);
      assert.equal(signedOutDump.localStorage['svc.account'], undefined);
      assert.equal(
        store(signedOutDump, account, 'kv').rows.find((r) => r.key === 'identity'),
        undefined,
      );

      // The password opens it all again: the tags are the same on the next sign-in.
      await signIn(alice.page, names.alice, password);
      await openChat(alice.page, names.bob);
      for (const text of [dm, reply, unread]) await seeMessage(alice.page, text);
      await openChat(alice.page, room);
      await seeMessage(alice.page, inRoom);
    })();
  });

  test('a version-2 database is moved at the next sign-in: every message, action, outbox item, chat row and pin survives, and the old one is gone', async () => {
    await scene.step(async () => {
      const password = 'moved at rest password';
      const names = { carol: nick('carol'), dave: nick('dave') };
      const roomName = `Moved ${randomBytes(3).toString('hex')}`;
      const node = () => new Messenger({ api: new ApiClient({ baseUrl: scene.server.origin, origin: scene.server.origin, fetch: cookieFetch() }) });
      const dave = node();
      await dave.register({ nick: names.dave, password, kdf: KDF_MIN });
      const carol = node();
      await carol.register({ nick: names.carol, password, kdf: KDF_MIN });
      const room = await carol.createRoom(roomName, [names.dave]);
      const dmChat = `dm:${names.dave}` as const;
      const roomChat = `room:${room.id}` as const;
      const key = carol.historyKey;

      // The old layout, sealed as version 2 sealed it: contexts name chat and id in the clear.
      const day = 24 * 60 * 60 * 1000;
      const t0 = Date.now() - 3 * day;
      const texts = {
        fromDave: scene.text('old from dave'),
        mine: scene.text('old mine'),
        v1: scene.text('oldest v1 row'),
        room1: scene.text('old room one'),
        room2: scene.text('old room two'),
        queued: scene.text('old outbox'),
      };
      const records: ChatMessage[] = [
        { id: carol.api.newId(), chat: dmChat, ts: t0, from: names.dave, sentAt: t0, mid: newMid(), kind: 'text', body: texts.fromDave },
        {
          id: carol.api.newId(),
          chat: dmChat,
          ts: t0 + day,
          from: names.carol,
          sentAt: t0 + day,
          mid: newMid(),
          kind: 'text',
          body: texts.mine,
          state: 'sent',
        },
        {
          id: carol.api.newId(),
          chat: roomChat,
          ts: t0 + 10 * 60_000,
          from: names.dave,
          sentAt: t0 + 10 * 60_000,
          mid: newMid(),
          kind: 'text',
          body: texts.room1,
        },
        {
          id: carol.api.newId(),
          chat: roomChat,
          ts: t0 + 2 * day,
          from: names.carol,
          sentAt: t0 + 2 * day,
          mid: newMid(),
          kind: 'text',
          body: texts.room2,
          state: 'sent',
        },
      ];
      const now = Date.now();
      const queued: ChatMessage = {
        id: carol.api.newId(),
        chat: dmChat,
        ts: now,
        from: names.carol,
        sentAt: now,
        mid: newMid(),
        kind: 'text',
        body: texts.queued,
        state: 'queued',
      };
      const outboxItem: OutboxItem = {
        id: queued.id,
        chat: dmChat,
        plain: { type: 'text', body: texts.queued, sentAt: now, mid: queued.mid! },
        createdAt: now,
        priority: 'user',
        state: 'waiting',
        attempts: 0,
      };
      const target = carol.api.newId();
      const pending: Omit<PendingAction, 'at'> = {
        id: carol.api.newId(),
        target,
        chat: dmChat,
        from: names.dave,
        ts: now,
        plain: { v: 1, type: 'reaction', target, emoji: '👍', op: 'add', sentAt: now, mid: newMid() },
      };
      const v1Id = carol.api.newId();
      const sealedMessage = async (m: ChatMessage) => {
        const { id, chat, ts, ...content } = m;
        return { id, chat, ts, ...(m.mid ? { mid: m.mid } : {}), sealed: await sealAtRest(key, content, `msg|${chat}|${id}`) };
      };
      const rows: LegacyRows = {
        messages: [
          ...(await Promise.all([...records, queued].map(sealedMessage))),
          // Version 1's content: one state field, no kind.
          {
            id: v1Id,
            chat: dmChat,
            ts: t0 - day,
            sealed: await sealAtRest(key, { from: names.dave, body: texts.v1, sentAt: t0 - day, state: 'received' }, `msg|${dmChat}|${v1Id}`),
          },
        ],
        chats: [
          { chat: dmChat, sealed: await sealAtRest(key, { lastTs: now, unread: 2, preview: `You: ${texts.queued}` }, `chat|${dmChat}`) },
          // Older still: a chat row in the clear.
          { chat: roomChat, lastTs: t0 + 2 * day, unread: 1 },
        ],
        pins: [{ nick: names.dave, sealed: await sealAtRest(key, { publicKey: dave.publicKey, pinnedAt: t0, verifiedAt: t0 }, `pin|${names.dave}`) }],
        pending: [{ id: pending.id, target, sealed: await sealAtRest(key, pending, `pending|${pending.id}`) }],
        outbox: [{ id: outboxItem.id, sealed: await sealAtRest(key, outboxItem, `outbox|${outboxItem.id}`) }],
        kv: [{ key: 'meta:probe', value: await sealAtRest(key, { kept: true }, 'meta|probe') }],
      };
      // Letters only: twelve hex digits hold ten decimal digits in a row about once in sixty, and
      // the storage scan below rightly reads those as a time in the clear.
      const deviceId = `legacy_${randomBytes(6)
        .toString('hex')
        .replace(/\d/g, (d) => 'ghijklmnop'.charAt(Number(d)))}`;
      const legacyLocal = {
        'svc.account': names.carol,
        [`svc.device.${names.carol}`]: deviceId,
        [`svc.kdf.${names.carol}`]: JSON.stringify({ m: KDF_MIN.m, t: KDF_MIN.t }),
      };

      // The app's real parameters on this device: its sign-in below must pass on the KDF memory it moves, not on the test switch's lower floor.
      const d = await scene.device('carol', { realKdf: true });
      await d.page.goto('/');
      await button(d.page, 'Sign in').waitFor({ timeout: KDF_PATIENCE });
      await writeLegacy(d.page, names.carol, rows, legacyLocal);
      // A reload of version 2 signed out since: the form offers the account it had.
      await d.page.reload();
      await button(d.page, 'Sign in').waitFor({ timeout: KDF_PATIENCE });
      assert.equal(await nickInput(d.page).inputValue(), names.carol);

      // The browser saw KDF_MIN for carol (the old entry): the sign-in goes on without a warning.
      await signIn(d.page, names.carol, password);
      await described(d.page, names.dave, /Verified, 2 unread/);
      await described(d.page, roomName, /1 unread/);
      await openChat(d.page, names.dave);
      for (const text of [texts.v1, texts.fromDave, texts.mine, texts.queued]) await seeMessage(d.page, text);
      // The outbox item goes out from the moved outbox.
      await statusShows(d.page, texts.queued, 'Sent');
      await openChat(d.page, roomName);
      for (const text of [texts.room1, texts.room2]) await seeMessage(d.page, text);
      assert.equal(d.deviceIds.at(-1), deviceId, 'the device id moved with the account');

      const dump = await dumpStorage(d.page);
      const account = `svc-${await atRestTag(carol.indexKey, 'db')}`;
      assert.deepEqual(
        dump.databases.map((x) => x.name),
        [account],
        'the old database is gone',
      );
      const needles = [names.carol, names.dave, 'dm:', 'room:', room.id, roomName, ...Object.values(texts)];
      assert.deepEqual(
        leaks(dump, needles, (db, s, k) => db === account && s === 'kv' && k === 'identity'),
        [],
      );
      assert.equal(store(dump, account, 'messages').rows.length, 6);
      assert.equal(store(dump, account, 'pending').rows.length, 1);
      assert.equal(store(dump, account, 'pins').rows.length, 1);
      assert.equal(store(dump, account, 'chats').rows.length, 2);
      const metaKey = await atRestTag(carol.indexKey, 'meta|probe');
      assert.ok(
        store(dump, account, 'kv').rows.some((r) => r.key === metaKey),
        'the named value moved under its tag',
      );
      assert.equal(
        store(dump, account, 'kv').rows.find((r) => r.key === 'moved'),
        undefined,
      );
      assert.equal(dump.localStorage[`svc.device.${await atRestTag(carol.indexKey, 'device')}`], deviceId);
      assert.deepEqual(
        Object.values(dump.localStorage).filter((v) => v.startsWith('{')),
        [JSON.stringify({ m: KDF_MIN.m, t: KDF_MIN.t })],
        'the KDF memory moved under a hash',
      );
      moved = { d, carol, names, roomName, texts, rows, queuedId: queued.id };
    })();
  });

  test('a version-2 database holding a saved session resumes after the update without the password, moved on the way', async () => {
    await scene.step(async () => {
      assert.ok(moved, 'the previous test moved an account');
      const { d, carol, names, roomName, texts, rows } = moved;
      const account = `svc-${await atRestTag(carol.indexKey, 'db')}`;
      // Without the outbox item, which the previous test sent already.
      const old = { ...rows, outbox: [], messages: rows.messages.filter((r) => r.id !== moved!.queuedId) };
      // A page of the origin that runs no app code, so nothing writes meanwhile.
      await d.page.goto('/icon.svg');
      await writeLegacy(d.page, names.carol, old, { 'svc.account': names.carol }, account);
      await d.page.goto('/');
      await chatEntry(d.page, names.dave).waitFor({ timeout: KDF_PATIENCE });
      assert.equal(await button(d.page, 'Sign in').isVisible(), false, 'no password asked');
      await described(d.page, names.dave, /Verified, 2 unread/);
      await openChat(d.page, names.dave);
      for (const text of [texts.v1, texts.fromDave, texts.mine]) await seeMessage(d.page, text);
      await openChat(d.page, roomName);
      for (const text of [texts.room1, texts.room2]) await seeMessage(d.page, text);

      const dump = await dumpStorage(d.page);
      assert.deepEqual(
        dump.databases.map((x) => x.name),
        [account],
      );
      assert.equal(dump.localStorage['svc.account'], account);
      const needles = [names.carol, names.dave, 'dm:', 'room:', roomName, ...Object.values(texts)];
      assert.deepEqual(
        leaks(dump, needles, (db, s, k) => db === account && s === 'kv' && k === 'identity'),
        [],
      );
      assert.equal(store(dump, account, 'messages').rows.length, 5);
    })();
  });
});
