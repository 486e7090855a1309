/**
 * The search index kept in the store (conversation/search-store.ts): read back in a later session
 * it finds what an index built from the records finds, without opening the records; a message
 * deleted or expired, or a chat forgotten, never comes back in search after a restart, whenever the
 * app stopped (every write is taken as a moment it could have); a part or manifest that does not
 * read, or one of another format, is built again from the records, never fatal.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  Conversations,
  expireDue,
  K_SEARCH_MANIFEST,
  MemoryStore,
  SEARCH_FORMAT,
  SearchIndex,
  SearchStore,
  searchPartKey,
  tombstone,
  trackExpiry,
  type ChatId,
  type ChatMessage,
  type MemorySnapshot,
  type Plain,
  type RuleContext,
  ingest,
} from '../src/index.js';
import { register, sleep, startServer, type TestServer } from './server.js';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

const WORDS = ['secret', 'plan', 'café', 'lunch', 'tomorrow', 'notes', 'train', 'late'];
const QUERIES = ['secret', 'plan', 'CAFE', 'lunch tomorrow', 'notes.pdf', 'train late', 'nothing here'];

const rec = (id: string, chat: ChatId, ts: number, body: string, extra: Partial<ChatMessage> = {}): ChatMessage => ({
  id,
  chat,
  ts,
  from: ts % 2 ? 'bob' : 'alice',
  sentAt: ts,
  kind: 'text',
  body,
  ...extra,
});

/** `n` records over `chats`, with words enough for every query to find some. */
function history(n: number, chats: ChatId[]): ChatMessage[] {
  return Array.from({ length: n }, (_, i) => {
    const body = [0, 1, 2].map((j) => WORDS[(i * 3 + j * 5) % WORDS.length]).join(' ') + ` #${i}`;
    const extra: Partial<ChatMessage> =
      i % 7 === 0 ? { attachment: { id: `f${i}`, key: 'k', sha256: 's', plainSize: 1, size: 1, name: 'notes.pdf', mime: 'x', type: 'file' } } : {};
    return rec(`m${String(i).padStart(5, '0')}`, chats[i % chats.length]!, 1000 + i, body, extra);
  });
}

/** What an index built from these records finds. */
function reference(records: ChatMessage[]): (q: string) => ReturnType<SearchIndex['search']> {
  const ix = new SearchIndex();
  for (const m of records) ix.put(m);
  return (q) => ix.search(q, 1000);
}

async function assertSame(store: SearchStore, records: ChatMessage[], what = ''): Promise<void> {
  const ref = reference(records);
  for (const q of QUERIES) assert.deepEqual(await store.search(q, 1000), ref(q), `${what} "${q}"`);
}

/** A store as the next session finds it, counting the record reads. */
function restart(snap: MemorySnapshot, o: { partSize?: number } = {}) {
  const inner = MemoryStore.from(snap);
  const reads = { all: 0, chat: 0 };
  const all = inner.all.bind(inner);
  const chat = inner.chat.bind(inner);
  inner.all = () => (reads.all++, all());
  inner.chat = (c, opt) => (reads.chat++, chat(c, opt));
  const parts = { read: 0 };
  const getMeta = inner.getMeta.bind(inner);
  inner.getMeta = (k) => (k.startsWith('search|') && parts.read++, getMeta(k));
  const errors: unknown[] = [];
  const store = new SearchStore(inner, { delayMs: 60_000, onError: (e) => errors.push(e), ...o });
  return { inner, store, reads, errors, parts };
}

/** Every meta value of the index, as stored. */
const indexValues = (snap: MemorySnapshot) => snap.meta.filter(([k]) => k === K_SEARCH_MANIFEST || k.startsWith('search|'));

test('an index read back in a later session finds what one built from the records finds, without opening the records', async () => {
  const inner = new MemoryStore();
  const store = new SearchStore(inner, { delayMs: 60_000, partSize: 50 });
  const records = history(400, ['dm:bob', 'dm:carol', 'room:r1', 'room:r2']);
  for (const m of records) await store.put(m);
  await assertSame(store, records, 'built');
  await store.flush();
  const parts = indexValues(inner.snapshot()).filter(([k]) => k.startsWith('search|'));
  assert.equal(parts.length, 8, 'four chats of 100 in parts of 50');

  const next = restart(inner.snapshot(), { partSize: 50 });
  await assertSame(next.store, records, 'read back');
  assert.deepEqual(next.reads, { all: 0, chat: 0 });
  assert.deepEqual(next.errors, []);
});

test('warm() reads the stored parts a chat at a time after a pause each, shares them with a search meanwhile, and stops when a pause rejects', async () => {
  const inner = new MemoryStore();
  const store = new SearchStore(inner, { delayMs: 60_000, partSize: 50 });
  const records = history(400, ['dm:bob', 'dm:carol', 'room:r1', 'room:r2']);
  for (const m of records) await store.put(m);
  await store.index();
  await store.flush();

  // A search during the second pause reads the other chats at once; the warm reads none again.
  const next = restart(inner.snapshot(), { partSize: 50 });
  let pauses = 0;
  let searched: Promise<void> | null = null;
  await next.store.warm(async () => {
    if (++pauses === 2) searched = assertSame(next.store, records, 'during the warm');
    await searched;
  });
  assert.equal(pauses, 2, 'the search read the chats the warm had not');
  assert.equal(next.parts.read, 8, 'four chats of 100 in parts of 50, each read once');
  await assertSame(next.store, records, 'warmed');
  assert.equal(next.parts.read, 8);
  assert.deepEqual(next.reads, { all: 0, chat: 0 });

  const stopped = restart(inner.snapshot(), { partSize: 50 });
  await assert.rejects(
    stopped.store.warm(async () => {
      if (stopped.parts.read > 0) throw new Error('stop');
    }),
    /stop/,
  );
  assert.equal(stopped.parts.read, 2, 'one chat read before the stop');
  await assertSame(stopped.store, records, 'after a stopped warm');

  // No index stored: the warm reads nothing (the first search builds it).
  const bare = new MemoryStore();
  for (const m of records) await bare.put(m);
  const cold = restart(bare.snapshot());
  await cold.store.warm(async () => assert.fail('no pause without an index'));
  assert.deepEqual(cold.reads, { all: 0, chat: 0 });
});

test('changes are written within the delay and read back; a change that alters nothing writes nothing', async () => {
  const inner = new MemoryStore();
  const store = new SearchStore(inner, { delayMs: 20 });
  const records = history(30, ['dm:bob', 'room:r1']);
  for (const m of records) await store.put(m);
  await store.index();
  await store.flush();
  const edited = { ...records[3]!, body: 'an edited secret' };
  await store.put(edited);
  await store.put(rec('n1', 'dm:dave', 5000, 'a new chat with a plan'));
  await sleep(80);
  const manifest = (await inner.getMeta(K_SEARCH_MANIFEST)) as { chats: [string, number, 0 | 1][] };
  assert.ok(
    manifest.chats.every(([, , dirty]) => dirty === 0),
    'written and clean',
  );
  const now = [...records.slice(0, 3), edited, ...records.slice(4), rec('n1', 'dm:dave', 5000, 'a new chat with a plan')];
  await assertSame(restart(inner.snapshot()).store, now);

  // A receipt or reaction changes the record, not what search finds: no part is written.
  const before = JSON.stringify(indexValues(inner.snapshot()));
  await store.put({ ...records[5]!, reported: 'read', reactions: { '👍': ['bob'] } });
  await sleep(60);
  assert.equal(JSON.stringify(indexValues(inner.snapshot())), before);
});

test('a deleted or expired message is written out of the index at settle(), and never comes back after a restart, also one before the write', async () => {
  const inner = new MemoryStore();
  const store = new SearchStore(inner, { delayMs: 60_000 });
  const records = history(60, ['dm:bob', 'room:r1']);
  for (const m of records) await store.put(m);
  await store.index();
  await store.flush();

  const deleted = rec('d1', 'dm:bob', 9000, 'the launch code is swordfish', { from: 'bob' });
  const expiring = rec('e1', 'room:r1', 9001, 'burn after reading swordfish', { expire: 30, seenAt: 1 });
  await store.put(deleted);
  await store.put(expiring);
  await trackExpiry(store, [expiring]);
  await store.flush();
  assert.equal((await store.search('swordfish')).length, 2);

  // Deleted for everyone (the rules make the record a tombstone) and expired, with no write of the index yet.
  const c: RuleContext = { store, me: 'alice', isMember: () => true };
  await ingest(c, {
    ok: true,
    id: 'x1',
    ts: 9100,
    from: 'bob',
    chat: 'dm:bob',
    sentAt: 9100,
    plain: { v: 1, type: 'delete', target: 'd1', sentAt: 9100, mid: 'M'.repeat(22) } as Plain,
  });
  assert.equal((await inner.get('d1'))?.deleted, true);
  const cut = await expireDue(store, 100_000);
  assert.deepEqual(
    cut.records.map((m) => m.id),
    ['e1'],
  );
  assert.deepEqual(await store.search('swordfish'), []);
  const stopped = inner.snapshot();
  assert.ok(JSON.stringify(indexValues(stopped)).includes('swordfish'), 'not yet written');
  const early = restart(stopped);
  assert.deepEqual(await early.store.search('swordfish'), []);
  await assertSame(early.store, await early.inner.all(), 'restarted before the write');
  assert.equal(early.reads.chat, 2, 'the two chats marked dirty are made again from their records');

  await store.settle();
  const settled = inner.snapshot();
  assert.ok(!JSON.stringify(indexValues(settled)).includes('swordfish'), 'the parts no longer hold the text');
  const late = restart(settled);
  assert.deepEqual(await late.store.search('swordfish'), []);
  assert.deepEqual(late.reads, { all: 0, chat: 0 });
});

test('a restart at any write, through builds, edits, deletions, expiry, moves and a forgotten chat, finds what the records hold then', async () => {
  // Each write lands a task later, in the order it was asked for (as IndexedDB's do), and the moment
  // right after it is kept as one the app could have stopped at.
  const tick = () => new Promise<void>((r) => setImmediate(r));
  class Recording extends MemoryStore {
    snaps: MemorySnapshot[] = [];
    private async landed(write: () => Promise<void>): Promise<void> {
      await tick();
      const done = write();
      this.snaps.push(this.snapshot());
      await done;
    }
    override put(m: ChatMessage) {
      return this.landed(() => super.put(m));
    }
    override remove(id: string) {
      return this.landed(() => super.remove(id));
    }
    override putMeta(key: string, value: unknown) {
      return this.landed(() => super.putMeta(key, value));
    }
    override removeMeta(key: string) {
      return this.landed(() => super.removeMeta(key));
    }
    override async getMeta(key: string) {
      await tick();
      return super.getMeta(key);
    }
    override async chat(chat: ChatId, o?: { limit?: number; before?: { ts: number; id: string } }) {
      await tick();
      return super.chat(chat, o);
    }
  }
  const inner = new Recording();
  const store = new SearchStore(inner, { delayMs: 1, partSize: 4 });
  const records = history(24, ['dm:bob', 'room:r1', 'room:r2']);
  for (const m of records.slice(0, 12)) await store.put(m);
  await store.index();
  for (const m of records.slice(12)) await store.put(m);
  await sleep(10);
  await store.put({ ...records[0]!, body: 'edited: secret plan' });
  await store.put(tombstone(records[1]!));
  const { body: _gone, ...deleted } = records[2]!;
  await store.put({ ...deleted, deleted: true });
  await store.settle();
  await store.put({ ...records[4]!, id: 'moved-4' });
  await store.remove(records[4]!.id);
  await sleep(10);
  await store.forgetChat('room:r2');
  for (const m of records.slice(3, 12)) if (m.chat === 'room:r1') await store.put(tombstone(m));
  await store.put(rec('late', 'room:r2', 9999, 'a secret after forgetting'));
  await store.flush();

  assert.ok(inner.snaps.length > 40, `${inner.snaps.length} moments`);
  for (const [i, snap] of inner.snaps.entries()) {
    const { store: next, errors, inner: kept } = restart(snap, { partSize: 4 });
    await assertSame(next, snap.messages, `restart at write ${i}`);
    assert.deepEqual(errors, []);
    // Once written again, the store holds the parts the manifest lists and no other.
    await next.flush();
    const after = kept.snapshot();
    const manifest = after.meta.find(([k]) => k === K_SEARCH_MANIFEST)![1] as { chats: [string, number, number][] };
    assert.deepEqual(
      after.meta.flatMap(([k]) => (k.startsWith('search|') ? [k] : [])).sort(),
      manifest.chats.flatMap(([chat, parts]) => Array.from({ length: parts }, (_, n) => searchPartKey(chat, n))).sort(),
      `parts after a restart at write ${i}`,
    );
  }
});

test('a forgotten chat’s parts are gone when forgetChat resolves, and it stays out of search', async () => {
  const inner = new MemoryStore();
  const store = new SearchStore(inner, { delayMs: 60_000, partSize: 10 });
  const records = history(90, ['dm:bob', 'room:r1', 'room:gone']);
  for (const m of records) await store.put(m);
  await store.index();
  await store.flush();
  assert.equal(indexValues(inner.snapshot()).filter(([k]) => k.startsWith('search|room:gone|')).length, 3);
  await store.forgetChat('room:gone');
  const snap = inner.snapshot();
  assert.deepEqual(
    indexValues(snap).filter(([k]) => k.includes('room:gone')),
    [],
  );
  const manifest = snap.meta.find(([k]) => k === K_SEARCH_MANIFEST)![1] as { chats: [string][] };
  assert.ok(!manifest.chats.some(([chat]) => chat === 'room:gone'));
  const next = restart(snap);
  assert.ok((await next.store.search('secret', 1000)).every((h) => h.chat !== 'room:gone'));
  await assertSame(next.store, snap.messages);
  assert.deepEqual(next.reads, { all: 0, chat: 0 });
});

test('a part that is missing, does not open or is of another chat is made again from the records, never fatal', async () => {
  const inner = new MemoryStore();
  const store = new SearchStore(inner, { delayMs: 60_000 });
  const records = history(40, ['dm:bob', 'room:r1']);
  for (const m of records) await store.put(m);
  await store.index();
  await store.flush();
  const good = inner.snapshot();
  const bob = searchPartKey('dm:bob', 0);
  const r1 = (await inner.getMeta(searchPartKey('room:r1', 0))) as object;
  for (const bad of [undefined, 'not a part', { v: SEARCH_FORMAT, chat: 'dm:bob', n: 0, entries: [[1, 2]] }, { ...r1 }]) {
    const snap: MemorySnapshot = { ...good, meta: good.meta.filter(([k]) => k !== bob).concat(bad === undefined ? [] : [[bob, bad]]) };
    const next = restart(snap);
    await assertSame(next.store, records, `part ${JSON.stringify(bad)?.slice(0, 40)}`);
    assert.equal(next.reads.chat, 1, 'only that chat is made again');
    assert.equal(next.errors.length, 1);
    // Written again, the next session reads it.
    await next.store.flush();
    const again = restart(next.inner.snapshot());
    await assertSame(again.store, records);
    assert.deepEqual([again.reads, again.errors], [{ all: 0, chat: 0 }, []]);
  }
});

test('a manifest of another format, or one that does not read, is built again from the records; the old parts go', async () => {
  const inner = new MemoryStore();
  const store = new SearchStore(inner, { delayMs: 60_000, partSize: 10 });
  const records = history(40, ['dm:bob', 'room:r1']);
  for (const m of records) await store.put(m);
  await store.index();
  await store.flush();
  const good = inner.snapshot();
  const manifest = good.meta.find(([k]) => k === K_SEARCH_MANIFEST)![1] as { chats: [string, number, number][] };
  // An older format listed a chat this history no longer has.
  const older = { ...manifest, v: SEARCH_FORMAT + 1, chats: [...manifest.chats, ['room:old', 2, 0]] };
  const oldParts: [string, unknown][] = [
    [searchPartKey('room:old', 0), { v: 0, entries: ['secret'] }],
    [searchPartKey('room:old', 1), { v: 0, entries: ['secret'] }],
  ];
  for (const value of [older, 'garbage', { v: SEARCH_FORMAT, complete: false, chats: [] }]) {
    const snap: MemorySnapshot = {
      ...good,
      meta: good.meta.filter(([k]) => k !== K_SEARCH_MANIFEST).concat([[K_SEARCH_MANIFEST, value], ...oldParts]),
    };
    const next = restart(snap, { partSize: 10 });
    await assertSame(next.store, records);
    assert.equal(next.reads.all, 1, 'built from every record');
    await next.store.flush();
    const after = next.inner.snapshot();
    const oldGone = value === older;
    assert.equal(
      after.meta.some(([k]) => k.startsWith('search|room:old|')),
      !oldGone,
      'the parts an older manifest names go',
    );
    const again = restart(after, { partSize: 10 });
    await assertSame(again.store, records);
    assert.deepEqual(again.reads, { all: 0, chat: 0 });
  }
});

test('Conversations writes a deletion and an expiry out of the stored index before it reports them', async () => {
  const alice = await register(server);
  const inner = new MemoryStore();
  const store = new SearchStore(inner, { delayMs: 60_000 });
  const conv = new Conversations({ messenger: alice.m, store, receipts: false });
  try {
    const now = Date.now();
    const take = (id: string, plain: Record<string, unknown>) =>
      conv.take({
        ok: true,
        id,
        ts: now,
        from: 'bob',
        chat: 'dm:bob',
        sentAt: now,
        plain: { v: 1, sentAt: now, mid: id.slice(-22), ...plain } as Plain,
      });
    await take('01JDSEARCH000000000000001', { type: 'text', body: 'the vault opens at midnight' });
    await take('01JDSEARCH000000000000002', { type: 'text', body: 'midnight it is' });
    await store.index();
    await store.flush();
    const stored = () => JSON.stringify(indexValues(inner.snapshot()));
    assert.ok(stored().includes('vault'));

    await take('01JDSEARCH000000000000003', { type: 'delete', target: '01JDSEARCH000000000000001' });
    assert.ok(!stored().includes('vault'), 'written before take() resolved');

    const timed = rec('01JDSEARCH000000000000004', 'dm:bob', now, 'self-destructing midnight memo', { expire: 30, seenAt: now - 60_000 });
    await store.put(timed);
    await trackExpiry(store, [timed]);
    await store.flush();
    assert.ok(stored().includes('self-destructing'));
    const cut = await conv.expireDue();
    assert.equal(cut.records.length, 1);
    assert.ok(!stored().includes('self-destructing'), 'written before expireDue() resolved');
    assert.deepEqual(
      (await store.search('midnight')).map((h) => h.body),
      ['midnight it is'],
    );
  } finally {
    conv.stop();
    await store.close();
  }
});
