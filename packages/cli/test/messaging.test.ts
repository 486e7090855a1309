/**
 * Messages through svc against the real service: a text as an argument or from standard input
 * reaches the contact, `listen --json` prints each one once with its fields and acknowledges only
 * what it printed, a room message reaches a member on the SDK, a changed key is refused until
 * `svc trust`, and a listener and a sender share one machine's state without losing either's records.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { ApiClient, Conversations, cookieFetch, downloadBytes, KDF_MIN, MemoryStore, Messenger, type ChatMessage } from '@svc/sdk';
import { writeBehindService } from '@svc/testkit/harness';
import { nodeArgon2 } from '../src/argon2.js';
import { Machine, nick, signedUp, startService, type Service } from './harness.js';

let service: Service;
const machines: Machine[] = [];
before(async () => {
  service = await startService();
});
after(async () => {
  for (const m of machines) m.remove();
  await service.stop();
});

async function pair(): Promise<[Machine & { nick: string }, Machine & { nick: string }]> {
  const a = await signedUp(service, 'ann');
  const b = await signedUp(service, 'ben');
  machines.push(a, b);
  return [a, b];
}

interface Line {
  chat: string;
  room?: string;
  from: string;
  id: string;
  time: string;
  type: string;
  text: string;
}

test('a text from the command line and one from standard input arrive, printed by listen --json once each with chat, from, id, time, type and text', async () => {
  const [ann, ben] = await pair();
  const one = await ann.run(['send', ben.nick, 'deploy of 1.4.2 done']);
  assert.equal(one.code, 0, one.stderr);
  assert.equal(one.stdout, '');
  const two = await ann.run(['send', ben.nick, '-'], { input: 'backup failed:\ndisk full\n' });
  assert.equal(two.code, 0, two.stderr);
  const first = await ben.run(['listen', '--json', '--once']);
  assert.equal(first.code, 0, first.stderr);
  const got = JSON.parse(first.stdout.trim()) as Line;
  assert.deepEqual(Object.keys(got).sort(), ['chat', 'from', 'id', 'text', 'time', 'type']);
  assert.deepEqual(
    { chat: got.chat, from: got.from, type: got.type, text: got.text },
    { chat: `dm:${ann.nick}`, from: ann.nick, type: 'text', text: 'deploy of 1.4.2 done' },
  );
  assert.match(got.id, /^[0-9A-HJKMNP-TV-Z]{26}$/);
  assert.ok(Math.abs(Date.parse(got.time) - Date.now()) < 60_000);
  // --once acknowledged only what it printed: the second message waits for the next listener.
  const second = await ben.run(['listen', '--json', '--once']);
  assert.equal(second.code, 0, second.stderr);
  const next = JSON.parse(second.stdout.trim()) as Line;
  assert.equal(next.text, 'backup failed:\ndisk full');
  assert.notEqual(next.id, got.id);
  const history = await ben.run(['history', ann.nick, '--json']);
  assert.deepEqual(
    history.stdout
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as Line).text),
    ['deploy of 1.4.2 done', 'backup failed:\ndisk full'],
  );
  const chats = await ben.run(['chats']);
  assert.match(chats.stdout, new RegExp(`^${ann.nick}  2 messages`, 'm'));
});

test('an empty text, an unknown contact and an unknown room are refused with one line and nothing is sent', async () => {
  const [ann, ben] = await pair();
  const empty = await ann.run(['send', ben.nick, '-'], { input: '\n\n' });
  assert.equal(empty.code, 2);
  assert.equal(empty.stderr, 'svc: nothing to send: the text is empty\n');
  const nobody = await ann.run(['send', nick('nobody'), 'hello']);
  assert.equal(nobody.code, 1);
  assert.match(nobody.stderr, /^svc: no such user: \w+\n$/);
  const room = await ann.run(['send', '--room', 'no-such-room', 'hello']);
  assert.equal(room.code, 2);
  assert.equal(room.stderr, `svc: no room named no-such-room among the rooms of ${ann.nick}\n`);
  const history = await ann.run(['history', ben.nick, '--json']);
  assert.equal(history.stdout, '', 'nothing was queued or sent');
});

test('send --room reaches a member of the room, who reads it on the SDK', async () => {
  const ann = await signedUp(service, 'ann');
  machines.push(ann);
  const api = new ApiClient({ baseUrl: service.url, origin: service.url, fetch: cookieFetch() });
  const owner = new Messenger({ api, argon2: nodeArgon2, kdfFloor: KDF_MIN });
  await owner.register({ nick: nick('owner'), password: 'owner password', kdf: KDF_MIN });
  await owner.ensureDevice(`dev-${owner.nick}`);
  const conv = new Conversations({ messenger: owner, store: new MemoryStore(), receipts: false });
  const room = await owner.createRoom('ops', [ann.nick]);
  const texts: string[] = [];
  const stream = owner.events({
    onMsg: async (env) => {
      const r = await conv.receive(env);
      if (r.added?.body) texts.push(r.added.body);
    },
  });
  stream.start();
  try {
    const r = await ann.run(['send', '--room', 'ops', 'nightly backup ok']);
    assert.equal(r.code, 0, r.stderr);
    for (let i = 0; i < 100 && texts.length === 0; i++) await new Promise((res) => setTimeout(res, 50));
    assert.deepEqual(texts, ['nightly backup ok']);
    const byId = await ann.run(['send', '--room', room.id, 'by id too']);
    assert.equal(byId.code, 0, byId.stderr);
  } finally {
    await stream.close();
    conv.stop();
  }
});

test('send --file reaches a person, who downloads the same bytes, and listen prints it as a file with its caption', async () => {
  const ann = await signedUp(service, 'ann');
  machines.push(ann);
  const api = new ApiClient({ baseUrl: service.url, origin: service.url, fetch: cookieFetch() });
  const peer = new Messenger({ api, argon2: nodeArgon2, kdfFloor: KDF_MIN });
  await peer.register({ nick: nick('peer'), password: 'peer password', kdf: KDF_MIN });
  await peer.ensureDevice(`dev-${peer.nick}`);
  const conv = new Conversations({ messenger: peer, store: new MemoryStore(), receipts: false });
  const got: ChatMessage[] = [];
  const stream = peer.events({
    onMsg: async (env) => {
      const r = await conv.receive(env);
      if (r.added) got.push(r.added);
    },
  });
  stream.start();
  const dir = mkdtempSync(join(tmpdir(), 'svc-cli-file-'));
  try {
    const bytes = randomBytes(60_000);
    const path = join(dir, 'nightly-report.csv');
    writeFileSync(path, bytes);
    const r = await ann.run(['send', peer.nick, '--file', path, 'the nightly report']);
    assert.equal(r.code, 0, r.stderr);
    for (let i = 0; i < 100 && got.length === 0; i++) await new Promise((res) => setTimeout(res, 50));
    const m = got[0]!;
    assert.deepEqual(
      [m.attachment?.type, m.attachment?.name, m.attachment?.mime, m.attachment?.plainSize, m.body],
      ['file', 'nightly-report.csv', 'text/csv', 60_000, 'the nightly report'],
    );
    assert.ok(Buffer.from(await downloadBytes(api, m.attachment!)).equals(bytes), 'the same bytes');
    const history = await ann.run(['history', peer.nick, '--json']);
    const line = JSON.parse(history.stdout.trim().split('\n').at(-1)!) as Line & { file?: unknown };
    assert.deepEqual(
      [line.type, line.text, line.file],
      ['file', 'the nightly report', { name: 'nightly-report.csv', mime: 'text/csv', size: 60_000 }],
    );
    const missing = await ann.run(['send', peer.nick, '--file', join(dir, 'nope.txt')]);
    assert.deepEqual([missing.code, missing.stderr], [2, `svc: cannot read ${join(dir, 'nope.txt')}\n`]);
  } finally {
    await stream.close();
    conv.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A P-256 public key nobody here holds, in the wire form (65 bytes, base64url). */
function strangerKey(): string {
  const jwk = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey.export({ format: 'jwk' });
  return Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x!, 'base64url'), Buffer.from(jwk.y!, 'base64url')]).toString('base64url');
}

test('a changed key is refused with one line and exit 4 until the safety number was compared and svc trust accepted it', async () => {
  const [ann, ben] = await pair();
  assert.equal((await ann.run(['send', ben.nick, 'first, key pinned'])).code, 0);
  const before = await ann.run(['safety-number', ben.nick]);
  assert.match(before.stdout, /^(\d{5} ){11}\d{5}\n$/);
  // The service now serves another key for ben, as a hostile service or a stolen database could.
  await writeBehindService(service.dbPath, 'UPDATE accounts SET public_key = ? WHERE nick = ?', [strangerKey(), ben.nick]);
  const refused = await ann.run(['send', ben.nick, 'must not go']);
  assert.equal(refused.code, 4);
  assert.match(refused.stderr, new RegExp(`^svc: The key of ${ben.nick} changed since it was first seen\\. .*\\n$`));
  const number = await ann.run(['safety-number', ben.nick]);
  assert.equal(number.code, 0, number.stderr);
  assert.match(number.stdout, /^(\d{5} ){11}\d{5}\n$/);
  assert.notEqual(number.stdout, before.stdout, 'the number is for the new key');
  assert.match(number.stderr, new RegExp(`run: svc trust ${ben.nick}`));
  assert.equal((await ann.run(['send', ben.nick, 'still refused'])).code, 4);
  const trust = await ann.run(['trust', ben.nick]);
  assert.equal(trust.code, 0, trust.stderr);
  const after = await ann.run(['send', ben.nick, 'after consent']);
  assert.equal(after.code, 0, after.stderr);
  const again = await ann.run(['trust', ben.nick]);
  assert.equal(again.code, 1);
  assert.match(again.stderr, /no key change of \w+ is waiting/);
});

test('a listener and a sender on the same machine share its state file and neither loses the other records', async () => {
  const [ann, ben] = await pair();
  const listening = ben.start(['listen', '--json']);
  try {
    await listening.until((r) => r.stderr.includes('listening'), 'listen to be live');
    const sends = [];
    for (let i = 0; i < 3; i++) {
      sends.push(ann.run(['send', ben.nick, `to ben ${i}`]));
      sends.push(ben.run(['send', ann.nick, `from ben ${i}`]));
    }
    for (const r of await Promise.all(sends)) assert.equal(r.code, 0, r.stderr);
    await listening.until((r) => r.lines.length >= 3, 'three messages printed');
  } finally {
    assert.equal(await listening.stop(), 0, listening.stderr);
  }
  assert.deepEqual(listening.lines.map((l) => (JSON.parse(l) as Line).text).sort(), ['to ben 0', 'to ben 1', 'to ben 2']);
  const history = await ben.run(['history', ann.nick, '--json']);
  const texts = history.stdout
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as Line).text)
    .sort();
  assert.deepEqual(texts, ['from ben 0', 'from ben 1', 'from ben 2', 'to ben 0', 'to ben 1', 'to ben 2']);
});
