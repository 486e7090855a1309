/**
 * The sealed history file (conversation/export.ts) with real accounts: the password alone opens it
 * on a fresh device; another account's file or a damaged one is refused with a clear error and
 * changes nothing; importing twice adds nothing; a file that would inflate past the cap is
 * refused before it is read.
 */
import assert from 'node:assert/strict';
import { randomBytes as nodeRandomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { Deflate } from 'fflate';
import { b64, concat, utf8 } from '../src/bytes.js';
import { sealData } from '../src/conversation/transfer-wire.js';
import {
  cipherSize,
  Conversations,
  EXPORT_ERRORS,
  EXPORT_INFLATE_MAX,
  exportAad,
  exportHistory,
  EXPORT_PIECE_BYTES,
  importHistory,
  MemoryFiles,
  MemoryStore,
  randomBytes,
  SdkError,
  type ChatMessage,
} from '../src/index.js';
import { fill, makeHistory } from './history-fixtures.js';
import { loginDevice, register, startServer, type TestServer } from './server.js';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

async function exported(n = 400) {
  const alice = await register(server);
  const store = new MemoryStore();
  const history = makeHistory(n, alice.m.nick);
  await fill(store, history);
  const { file } = await exportHistory(alice.m, store);
  return { alice, store, file };
}

const refusedWith = (message: string) => (e: unknown) => e instanceof SdkError && e.code === 'bad_export' && e.message === message;

test('an export opens again on a fresh device with the password alone, and importing it twice adds nothing', async (t) => {
  const { alice, store, file } = await exported(3000);
  t.diagnostic(`3000 records → ${file.length} bytes (${(file.length / 3000).toFixed(1)} per record)`);
  const fresh = await loginDevice(server, alice.m.nick, alice.password, `dev-${alice.m.nick}-2`);
  const target = new MemoryStore();
  const first = await importHistory(fresh.m, target, file);
  assert.deepEqual([first.records, first.added, first.changed, first.same], [3000, 3000, 0, 0]);
  assert.deepEqual(await target.all(), await store.all());
  const again = await importHistory(fresh.m, target, file);
  assert.deepEqual([again.added, again.changed, again.same], [0, 0, 3000]);
  assert.equal((await target.all()).length, 3000);
});

test('an export opened with another account is refused with a clear error and changes nothing', async () => {
  const { file } = await exported();
  const bob = await register(server);
  const target = new MemoryStore();
  await fill(target, makeHistory(5, bob.m.nick));
  const before = await target.all();
  await assert.rejects(importHistory(bob.m, target, file), refusedWith(EXPORT_ERRORS.otherAccount));
  assert.deepEqual(await target.all(), before);
});

test('a damaged history file is refused with a clear error and changes nothing', async () => {
  const { alice, file } = await exported();
  const target = new MemoryStore();
  await fill(target, makeHistory(5, alice.m.nick));
  const before = await target.all();
  const flip = (i: number) => {
    const f = file.slice();
    f[i]! ^= 0x40;
    return f;
  };
  const nickAt = 9;
  const cases: [string, Uint8Array, string][] = [
    ['a flipped byte in the sealed part', flip(file.length - 500), EXPORT_ERRORS.damaged],
    ['a cut-off file', file.subarray(0, file.length - 1000), EXPORT_ERRORS.damaged],
    ['only the header', file.subarray(0, nickAt + alice.m.nick.length + 4), EXPORT_ERRORS.damaged],
    ['another kind of file', new TextEncoder().encode('{"not":"a history file"}'), EXPORT_ERRORS.notHistory],
    ['an empty file', new Uint8Array(0), EXPORT_ERRORS.notHistory],
    [
      'a newer format',
      (() => {
        const f = file.slice();
        f[7] = 3;
        return f;
      })(),
      EXPORT_ERRORS.newer,
    ],
  ];
  for (const [what, bytes, message] of cases) {
    await assert.rejects(importHistory(alice.m, target, bytes), refusedWith(message), what);
    assert.deepEqual(await target.all(), before, `${what}: nothing changed`);
  }
  // The nick in the header is bound in the AAD: a file sealed for another nick under the same key,
  // its header rewritten to this account's nick, does not open.
  const { file: other } = await exportHistory(
    { nick: alice.m.nick.replace(/^./, (c) => (c === 'a' ? 'b' : 'a')), exportKey: alice.m.exportKey },
    target,
  );
  other.set(new TextEncoder().encode(alice.m.nick), nickAt);
  await assert.rejects(importHistory(alice.m, target, other), refusedWith(EXPORT_ERRORS.damaged));
  assert.deepEqual(await target.all(), before);
});

test('a history file that would inflate past the cap (a decompression bomb) is refused with a clear error and changes nothing', async () => {
  const alice = await register(server);
  // Sealed like a real export, so only the inflating can refuse it: 320 MiB of JSON spaces.
  const parts: Uint8Array[] = [];
  const z = new Deflate({ level: 9 }, (chunk) => parts.push(chunk));
  z.push(utf8('{"v":1,"exportedAt":1,"records":'));
  const spaces = new Uint8Array(1024 * 1024).fill(0x20);
  for (let i = 0; i < 320; i++) z.push(spaces);
  z.push(utf8('{"v":1,"n":0,"c":{}}}'), true);
  const body = concat(...parts);
  const nick = utf8(alice.m.nick);
  const file = concat(utf8('svchist'), Uint8Array.of(1, nick.length), nick, await sealData(alice.m.exportKey, exportAad(alice.m.nick), body));
  assert.ok(file.length < 1024 * 1024, `${file.length} bytes inflate to over ${EXPORT_INFLATE_MAX} bytes`);
  const target = new MemoryStore();
  await fill(target, makeHistory(5, alice.m.nick));
  const before = await target.all();
  await assert.rejects(importHistory(alice.m, target, file), refusedWith(EXPORT_ERRORS.tooLarge));
  assert.deepEqual(await target.all(), before);
});

test('a line of the chat’s own log ("carol joined") is exported, imported and never counted as damaged', async () => {
  const alice = await register(server);
  const store = new MemoryStore();
  const conv = new Conversations({ messenger: alice.m, store });
  const line = await conv.note('dm:carol_x', { what: 'joined', nicks: ['carol_x'] }, 'carol_x joined');
  const out = await exportHistory(alice.m, store);
  assert.deepEqual([out.records, out.dropped], [1, 0]);
  const target = new MemoryStore();
  const back = await importHistory(alice.m, target, out.file);
  assert.deepEqual([back.records, back.dropped], [1, 0]);
  assert.deepEqual(await target.get(line.id), line);
  // A line of the older form (no id or author of its own) stays behind, not counted as damaged.
  await store.put({ ...line, id: `event-${line.id}`, from: '' });
  assert.deepEqual([(await exportHistory(alice.m, store)).records, (await exportHistory(alice.m, store)).dropped], [1, 0]);
});

test('a file, a photo and a voice message keep their attachment through export and import; a malformed one is left out and counted', async () => {
  const alice = await register(server);
  const store = new MemoryStore();
  const base = { chat: 'dm:bob_x' as const, from: alice.m.nick, kind: 'text' as const, state: 'sent' as const };
  const file = {
    id: b64(randomBytes(16)),
    key: b64(randomBytes(32)),
    sha256: b64(randomBytes(32)),
    plainSize: 1000,
    size: cipherSize(1000),
    name: 'notes.pdf',
    mime: 'application/pdf',
  };
  const thumb = `data:image/jpeg;base64,${btoa(String.fromCharCode(...randomBytes(30)))}`;
  const records: ChatMessage[] = [
    { ...base, id: alice.m.api.newId(), ts: 1000, sentAt: 1000, body: 'the notes', attachment: { ...file, type: 'file' } },
    {
      ...base,
      id: alice.m.api.newId(),
      ts: 2000,
      sentAt: 2000,
      attachment: { ...file, type: 'photo', name: 'cat.jpg', mime: 'image/jpeg', width: 640, height: 480, thumb },
    },
    {
      ...base,
      id: alice.m.api.newId(),
      ts: 3000,
      sentAt: 3000,
      attachment: { ...file, type: 'voice', name: 'voice.ogg', mime: 'audio/ogg', durationMs: 4200, waveform: [0, 128, 255] },
    },
  ];
  for (const r of records) await store.put(r);
  await store.put({ ...base, id: alice.m.api.newId(), ts: 4000, sentAt: 4000, attachment: { ...file, type: 'file', size: file.size + 1 } });
  const out = await exportHistory(alice.m, store);
  assert.deepEqual([out.records, out.dropped], [3, 1]);
  const target = new MemoryStore();
  await importHistory(alice.m, target, out.file);
  for (const r of records) assert.deepEqual((await target.get(r.id))?.attachment, r.attachment);
});

/** An account's history naming three kept files (2.5 MB, empty, 10 bytes), one more kept file no message names. */
async function withFiles() {
  const alice = await register(server);
  const store = new MemoryStore();
  const kept = new MemoryFiles();
  const history = makeHistory(200, alice.m.nick);
  const files = new Map<string, Uint8Array>();
  for (const [i, size] of [2_500_000, 0, 10].entries()) {
    const id = b64(randomBytes(16));
    const bytes = new Uint8Array(nodeRandomBytes(size));
    files.set(id, bytes);
    await kept.put(id, bytes);
    const ts = 1_700_000_000_000 + i;
    history.push({
      id: alice.m.api.newId(),
      chat: 'dm:bob_x',
      ts,
      from: 'bob_x',
      sentAt: ts,
      kind: 'text',
      reported: 'read',
      attachment: {
        type: 'file',
        id,
        key: b64(randomBytes(32)),
        sha256: b64(randomBytes(32)),
        plainSize: size,
        size: cipherSize(size),
        name: `f${i}.bin`,
        mime: 'application/octet-stream',
      },
    });
  }
  await kept.put(b64(randomBytes(16)), randomBytes(50));
  await fill(store, history);
  return { alice, store, kept, files };
}

test('with "Include photos and files" the history file carries the files kept on the device, in sealed pieces, and importing puts them back byte for byte', async () => {
  const { alice, store, kept, files } = await withFiles();
  const out = await exportHistory(alice.m, store, Date.now(), { files: kept });
  assert.equal(out.files, 3);
  // Header, records, then the 2.5 MB file in three pieces and one piece for each small file.
  assert.equal(out.parts.length, 2 + 3 + 2);
  assert.ok(
    out.parts.slice(2).every((p) => p.length <= EXPORT_PIECE_BYTES + 22 + 32),
    'no piece larger than a megabyte and its seal',
  );
  assert.ok(out.size > 2_500_000);
  const fresh = await loginDevice(server, alice.m.nick, alice.password, `dev-${alice.m.nick}-2`);
  const target = new MemoryStore();
  const keptThere = new MemoryFiles();
  // Read from a Blob, as a browser reads the chosen file: a piece at a time.
  const r = await importHistory(fresh.m, target, new Blob(out.parts as Uint8Array<ArrayBuffer>[]), { files: keptThere });
  assert.deepEqual([r.records, r.files], [203, 3]);
  assert.deepEqual(await target.all(), await store.all());
  assert.deepEqual((await keptThere.list()).sort(), [...files.keys()].sort(), 'the files its messages name, no other');
  for (const [id, bytes] of files) assert.deepEqual(await keptThere.get(id), bytes);

  // Without the option the file holds the records only, naming the files (version 1, as before).
  const plain = await exportHistory(alice.m, store);
  assert.deepEqual([plain.files, plain.parts.length, plain.file[7]], [0, 1, 1]);
  const other = new MemoryFiles();
  const r2 = await importHistory(fresh.m, new MemoryStore(), plain.file, { files: other });
  assert.deepEqual([r2.records, r2.files, (await other.list()).length], [203, 0, 0]);
});

test('a history file with files that was altered, cut at a piece or had pieces swapped is refused with a clear error and changes nothing', async () => {
  const { alice, store, kept } = await withFiles();
  const out = await exportHistory(alice.m, store, Date.now(), { files: kept });
  const target = new MemoryStore();
  const keptThere = new MemoryFiles();
  const flipped = out.parts.map((p) => p.slice());
  flipped[3]![100]! ^= 1;
  const cases: [string, Uint8Array[]][] = [
    ['a flipped byte in a file piece', flipped],
    ['the last piece cut off', out.parts.slice(0, -1)],
    ['two pieces swapped', [...out.parts.slice(0, 3), out.parts[4]!, out.parts[3]!, ...out.parts.slice(5)]],
    ['a piece dropped', [...out.parts.slice(0, 3), ...out.parts.slice(4)]],
  ];
  for (const [what, parts] of cases) {
    await assert.rejects(importHistory(alice.m, target, concat(...parts), { files: keptThere }), refusedWith(EXPORT_ERRORS.damaged), what);
    assert.deepEqual([await target.all(), await keptThere.list()], [[], []], `${what}: nothing changed`);
  }
});

test('importing puts back only the files of messages that live on the device: one deleted or expired since the export stays gone', async () => {
  const { alice, store, kept, files } = await withFiles();
  const out = await exportHistory(alice.m, store, Date.now(), { files: kept });
  const [f0, f1, f2] = [...files.keys()];
  const named = async (id: string) => (await store.all()).find((m) => m.attachment?.id === id)!;
  // On this device, the message of f0 was deleted for everyone and that of f2 expired after the export was made.
  await store.put({ ...(await named(f0!)), deleted: true });
  await store.put({ ...(await named(f2!)), expired: true });
  const keptHere = new MemoryFiles();
  const r = await importHistory(alice.m, store, new Blob(out.parts as Uint8Array<ArrayBuffer>[]), { files: keptHere });
  assert.equal(r.records, 203);
  assert.deepEqual(await keptHere.list(), [f1], 'only the file of the message that lives');
  assert.equal((await named(f0!)).deleted, true, 'the deleted message stays deleted');
  assert.equal((await named(f2!)).expired, true, 'the expired message stays expired');
});
