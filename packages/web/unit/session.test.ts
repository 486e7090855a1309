/**
 * The Session, the web app's one owner of state, in Node: a real service in this process, real
 * SDK accounts, the app's IndexedDB store over fake-indexeddb. Views wait on its events, so each
 * action must emit the event they wait on, and nothing else in the app may emit them.
 */
import 'fake-indexeddb/auto';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { argon2id } from 'hash-wasm';
import { ApiClient, KDF_MIN, Messenger, cookieFetch, type Argon2Fn, type ChatId, type EventStream, type KeyCheck } from '@svc/sdk';
import { ORIGIN, startServer, type TestServer } from '@svc/testkit/harness';
import { Db } from '../src/app/idb.js';
import { Session, type SessionEvents } from '../src/app/session.js';
import { startSync } from '../src/app/sync.js';

/** hash-wasm's Argon2id: the SDK's own runs in plain JavaScript, several times slower. */
const argon2: Argon2Fn = (i) =>
  argon2id({ password: i.password, salt: i.salt, memorySize: i.m, iterations: i.t, parallelism: i.p, hashLength: i.length, outputType: 'binary' });

let server: TestServer;
const open: Session[] = [];
const streams: EventStream[] = [];

before(async () => {
  server = await startServer();
});

after(async () => {
  for (const stream of streams) await stream.close();
  for (const session of open) {
    session.close();
    session.db.close();
  }
  await server.close();
});

let seq = 0;

/** A new account signed in on a device of its own, as account.ts opens it (the trust store checks keys). */
async function signedIn(): Promise<Session> {
  seq++;
  const nick = `w${process.pid % 10000}_${seq}`;
  let check: KeyCheck | null = null;
  const messenger = new Messenger({
    api: new ApiClient({ baseUrl: server.url, origin: ORIGIN, fetch: cookieFetch() }),
    argon2,
    kdfFloor: KDF_MIN,
    keyCheck: (peer, key, purpose) => (check ? check(peer, key, purpose) : undefined),
  });
  await messenger.register({ nick, password: `pw-${nick}`, kdf: KDF_MIN });
  const deviceId = `dev-${nick}`;
  await messenger.ensureDevice(deviceId);
  const session = new Session(messenger, await Db.open(`svc-unit-${randomBytes(6).toString('hex')}`), deviceId);
  check = session.trust.keyCheck;
  await session.load();
  open.push(session);
  return session;
}

/** Resolves with the payload of the next `name` the session emits (subscribe before acting). */
function next<K extends keyof SessionEvents>(
  session: Session,
  name: K,
  when: (payload: SessionEvents[K]) => boolean = () => true,
): Promise<SessionEvents[K]> {
  return new Promise((resolve) => {
    const off = session.on(name, (payload) => {
      if (!when(payload)) return;
      off();
      resolve(payload);
    });
  });
}

/** Every event the session emits, in order, by name. */
function recorder(session: Session): { names: (keyof SessionEvents)[]; stop: () => void } {
  const names: (keyof SessionEvents)[] = [];
  const all: (keyof SessionEvents)[] = ['chats', 'change', 'conn', 'trust', 'rooms', 'gone', 'mute', 'membership', 'ended', 'problem', 'transfer'];
  const offs = all.map((name) => session.on(name, () => names.push(name)));
  return { names, stop: () => offs.forEach((off) => off()) };
}

/** Two accounts that have each other as contacts, each listed in the other's chat list. */
async function contacts(): Promise<{ alice: Session; bob: Session }> {
  const alice = await signedIn();
  const bob = await signedIn();
  await alice.contactAdded(await alice.messenger.api.addContact(bob.nick));
  await bob.contactAdded(await bob.messenger.api.addContact(alice.nick));
  return { alice, bob };
}

test('no module of the web app but the Session emits its events, and the Session offers no emit', async () => {
  const src = fileURLToPath(new URL('../../../src/', import.meta.url));
  const files = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
    });
  const emitting = files(src).filter((path) => /\.emit\(/.test(readFileSync(path, 'utf8')));
  assert.deepEqual(
    emitting.map((path) => path.slice(src.length)),
    ['app/session.ts'],
  );
  const session = await signedIn();
  assert.equal('emit' in session, false);
  // @ts-expect-error the emitter is the session's own
  assert.ok(session.events);
});

test('connectionChanged keeps the state and emits "conn" with it', async () => {
  const session = await signedIn();
  const conn = next(session, 'conn');
  session.connectionChanged('live');
  assert.equal(await conn, 'live');
  assert.equal(session.conn, 'live');
});

test('endedByService emits "ended" with the reason', async () => {
  const session = await signedIn();
  const ended = next(session, 'ended');
  session.endedByService('device_removed');
  assert.equal(await ended, 'device_removed');
});

test('reportProblem emits "problem" with the text for the banner', async () => {
  const session = await signedIn();
  const problem = next(session, 'problem');
  session.reportProblem('History transfer: no answer');
  assert.equal(await problem, 'History transfer: no answer');
});

test('roomsChanged emits "rooms", then the chat list with the new room in it', async () => {
  const session = await signedIn();
  const room = await session.messenger.createRoom('Plans', []);
  const seen = recorder(session);
  const chats = next(session, 'chats');
  session.roomsChanged();
  const list = await chats;
  seen.stop();
  assert.deepEqual(seen.names.slice(0, 2), ['rooms', 'chats']);
  assert.ok(list.some((c) => c.chat === `room:${room.id}` && c.title === 'Plans'));
});

test('forgetRoom emits "gone" with the chat, then "rooms" and a chat list without it', async () => {
  const session = await signedIn();
  const room = await session.messenger.createRoom('Old plans', []);
  session.roomsChanged();
  await session.messenger.deleteRoom(room.id);
  const seen = recorder(session);
  const gone = next(session, 'gone');
  const chats = next(session, 'chats');
  await session.forgetRoom(room.id);
  assert.equal(await gone, `room:${room.id}`);
  assert.ok(!(await chats).some((c) => c.chat === `room:${room.id}`));
  seen.stop();
  // The room's membership record goes too, which the SDK tells as a "membership" change.
  assert.deepEqual(
    seen.names.filter((name) => name !== 'membership'),
    ['gone', 'rooms', 'chats'],
  );
});

test('contactAdded and contactsListed emit the chat list with the DM, its key pinned on first sight', async () => {
  const alice = await signedIn();
  const bob = await signedIn();
  const added = next(alice, 'chats');
  await alice.contactAdded(await alice.messenger.api.addContact(bob.nick));
  assert.ok((await added).some((c) => c.chat === `dm:${bob.nick}` && c.title === bob.nick));
  assert.equal(alice.trust.pinned(bob.nick), bob.messenger.publicKey);
  const listed = next(alice, 'chats');
  await alice.contactsListed(await alice.messenger.api.contacts());
  assert.ok((await listed).some((c) => c.chat === `dm:${bob.nick}`));
});

test('setDraft emits the chat list with the draft line, and white space alone takes it away', async () => {
  const { alice, bob } = await contacts();
  const chat: ChatId = `dm:${bob.nick}`;
  const drafted = next(alice, 'chats');
  await alice.setDraft(chat, 'see you at noon');
  assert.match((await drafted).find((c) => c.chat === chat)?.draft ?? '', /see you at noon/);
  const cleared = next(alice, 'chats');
  await alice.setDraft(chat, '   ');
  assert.equal((await cleared).find((c) => c.chat === chat)?.draft, undefined);
});

test('setMute emits "mute" with the chat and a chat list marking it muted; unmuting takes the mark away', async () => {
  const { alice, bob } = await contacts();
  const chat: ChatId = `dm:${bob.nick}`;
  const mute = next(alice, 'mute');
  const muted = next(alice, 'chats');
  await alice.setMute(chat, 'always');
  assert.equal(await mute, chat);
  assert.deepEqual((await muted).find((c) => c.chat === chat)?.muted, { mentioned: false });
  assert.equal(alice.isMuted(chat), true);
  const unmuted = next(alice, 'chats');
  await alice.setMute(chat, 0);
  assert.equal((await unmuted).find((c) => c.chat === chat)?.muted, undefined);
  assert.equal(alice.isMuted(chat), false);
});

test('mutesChangedElsewhere emits "mute" for every chat, then the chat list', async () => {
  const session = await signedIn();
  const seen = recorder(session);
  const mute = next(session, 'mute');
  await session.mutesChangedElsewhere();
  assert.equal(await mute, '');
  seen.stop();
  assert.deepEqual(seen.names, ['mute', 'chats']);
});

test('keys.verify ("Mark as verified") emits "trust" and a chat list marking the contact verified', async () => {
  const { alice, bob } = await contacts();
  const key = await alice.keys.keyToCompare(bob.nick);
  assert.equal(key, bob.messenger.publicKey);
  assert.match(await alice.keys.safetyNumber(bob.nick, key), /^[\d ]+$/);
  const trust = next(alice, 'trust');
  const chats = next(alice, 'chats');
  await alice.keys.verify(bob.nick, key);
  await trust;
  assert.equal((await chats).find((c) => c.chat === `dm:${bob.nick}`)?.verified, true);
  assert.equal(alice.keys.status(bob.nick).verified, true);
});

test('a changed key holds the DM and is the one to compare; keys.accept emits "trust" and a chat list without the change', async () => {
  const { alice, bob } = await contacts();
  const chat: ChatId = `dm:${bob.nick}`;
  const otherKey = (await signedIn()).messenger.publicKey;
  // The service hands another key for bob than the one pinned.
  await alice.trust.observe(bob.nick, otherKey);
  assert.deepEqual(alice.keys.heldPeers(chat), [bob.nick]);
  assert.equal(await alice.keys.keyToCompare(bob.nick), otherKey);
  const trust = next(alice, 'trust');
  const chats = next(alice, 'chats');
  await alice.keys.accept(bob.nick);
  await trust;
  assert.equal((await chats).find((c) => c.chat === chat)?.keyChanged, false);
  assert.deepEqual(alice.keys.heldPeers(chat), []);
  assert.equal(alice.trust.pinned(bob.nick), otherKey);
});

test('messages.sendText emits "change" with the record and a chat list with its line; messages.page reads it back', async () => {
  const { alice, bob } = await contacts();
  const chat: ChatId = `dm:${bob.nick}`;
  const changed = next(alice, 'change', (c) => c.added?.body === 'lunch at one?');
  const listed = next(alice, 'chats', (list) => list.some((c) => c.chat === chat && /lunch at one\?/.test(c.preview ?? '')));
  const sent = await alice.messages.sendText(chat, 'lunch at one?');
  assert.equal((await changed).added?.id, sent.id);
  assert.equal((await listed).find((c) => c.chat === chat)?.preview, 'You: lunch at one?');
  assert.deepEqual(
    (await alice.messages.page(chat, { limit: 10 })).map((m) => m.id),
    [sent.id],
  );
  assert.equal(alice.messages.canEdit(sent), true);
  assert.deepEqual(alice.messages.mentionable(chat), []);
});

test('messages.setTimer emits "change" with the timer line, and messages.timer reads the new setting', async () => {
  const { alice, bob } = await contacts();
  const chat: ChatId = `dm:${bob.nick}`;
  const changed = next(alice, 'change', (c) => c.added?.chat === chat);
  await alice.messages.setTimer(chat, 30);
  await changed;
  assert.equal((await alice.messages.timer(chat)).seconds, 30);
  assert.equal(await alice.messages.setTimer(chat, 30), null);
});

test('a message that arrives emits "change" with it and a chat list counting it unread; markChatRead takes the count away', async () => {
  const { alice, bob } = await contacts();
  const chat: ChatId = `dm:${bob.nick}`;
  const arrived = next(alice, 'change', (c) => c.added?.body === 'are you there?');
  const counted = next(alice, 'chats', (list) => list.some((c) => c.chat === chat && c.unread === 1));
  streams.push(startSync(alice));
  await bob.conv.sendText(`dm:${alice.nick}`, 'are you there?');
  assert.equal((await arrived).added?.from, bob.nick);
  assert.match((await counted).find((c) => c.chat === chat)?.preview ?? '', /are you there\?/);
  const read = next(alice, 'chats', (list) => list.some((c) => c.chat === chat && c.unread === 0));
  alice.chatOnScreen(chat);
  alice.markChatRead(chat, []);
  await read;
});

test('deleteChat drops the chat from the store and emits a chat list without it', async () => {
  const { alice, bob } = await contacts();
  const chat: ChatId = `dm:${bob.nick}`;
  await alice.conv.sendText(chat, 'one last word');
  assert.equal((await alice.store.chat(chat, { limit: 10 })).length, 1);
  const chats = next(alice, 'chats');
  await alice.deleteChat(chat);
  await chats;
  assert.equal((await alice.store.chat(chat, { limit: 10 })).length, 0);
});
