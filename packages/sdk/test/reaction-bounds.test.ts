/**
 * A contact cannot break export or device transfer: reactions are capped per sender and message
 * at receipt (rules.ts), a removal never added changes nothing, and one record that fails the
 * check is left out and counted (history-codec.ts) instead of costing the whole file or chunk.
 * The attack is played end to end: a real contact sends thousands of reaction changes through the
 * real service, then the history is exported and imported, and sent to a new device.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Envelope } from '@svc/protocol';
import { makeUlid } from '@svc/protocol';
import { buildTransfer, makeTag, tagAad } from '../src/conversation/transfer-wire.js';
import { b64 } from '../src/bytes.js';
import { Conversations, exportHistory, importHistory, MAX_REACTIONS_PER_SENDER, MemoryStore, randomBytes, type ChatMessage } from '../src/index.js';
import { advance, arrive, fakeDevice, fill, makeHistory, pump, refusals, transferKey } from './history-fixtures.js';
import { loginDevice, register, sleep, startServer, type TestServer } from './server.js';

let server: TestServer;
before(async () => {
  server = await startServer({}, {}, 'sqlite');
});
after(async () => {
  await server.close();
});

async function until(pred: () => boolean | Promise<boolean>, what: string, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

/** One sender's reaction entries on a record. */
const entriesOf = (m: ChatMessage | undefined, nick: string) => Object.keys(m?.reactedAt ?? {}).filter((k) => k.startsWith(`${nick} `));

test(
  '4,097 reaction removals and a run of distinct additions from a contact leave a record that exports, imports and transfers',
  { timeout: 300_000 },
  async () => {
    const alice = await register(server);
    const bob = await register(server);
    const store = new MemoryStore();
    const conv = new Conversations({ messenger: alice.m, store });
    const got: Envelope[] = [];
    const stream = alice.m.events({
      onMsg: async (env) => {
        await conv.receive(env);
        got.push(env);
      },
      backoffMs: { initial: 50, max: 200 },
    });
    stream.start();
    try {
      const mine = await conv.sendText(`dm:${bob.m.nick}`, 'react to this');
      await until(async () => (await store.get(mine.id))?.state === 'sent', 'the message to be sent');

      const REMOVALS = 4097;
      const ADDS = MAX_REACTIONS_PER_SENDER + 8;
      const plains = [
        ...Array.from({ length: REMOVALS }, (_, i) => ({ emoji: `gone${i}`, op: 'remove' as const })),
        ...Array.from({ length: ADDS }, (_, i) => ({ emoji: `add${i}`, op: 'add' as const })),
      ];
      for (let i = 0; i < plains.length; i += 25)
        await Promise.all(
          plains
            .slice(i, i + 25)
            .map((p) =>
              bob.m.send(`dm:${alice.m.nick}`, { type: 'reaction', target: mine.id, ...p, sentAt: bob.m.api.now(), mid: b64(randomBytes(16)) }),
            ),
        );
      await until(() => got.length >= plains.length, `${plains.length} envelopes`, 240_000);

      const m = await store.get(mine.id);
      assert.equal(
        entriesOf(m, bob.m.nick).length,
        MAX_REACTIONS_PER_SENDER,
        'removals of what was never added leave no trace; additions stop at the cap',
      );
      assert.equal(Object.keys(m?.reactions ?? {}).length, MAX_REACTIONS_PER_SENDER);

      // Export, then import on a fresh device of the account.
      const exported = await exportHistory(alice.m, store);
      assert.equal(exported.dropped, 0);
      const phone = await loginDevice(server, alice.m.nick, alice.password, `dev-${alice.m.nick}-2`);
      const target = new MemoryStore();
      const imported = await importHistory(phone.m, target, exported.file);
      assert.deepEqual([imported.records, imported.dropped, imported.added], [1, 0, 1]);
      assert.deepEqual((await target.get(mine.id))?.reactions, m?.reactions);

      // The same history in a device transfer.
      const old = fakeDevice(alice.m.transferKey, 'dev-alice-old', { store, out: [] });
      const neu = fakeDevice(alice.m.transferKey, 'dev-alice-new');
      await neu.t.request();
      await pump(neu, [old]);
      await old.t.send('dev-alice-new');
      await pump(old, [neu]);
      assert.deepEqual(refusals(neu), []);
      assert.deepEqual((await neu.store.get(mine.id))?.reactions, m?.reactions);
    } finally {
      conv.stop();
      await stream.close();
    }
  },
);

/** A record pushed past the codec's limit before the cap existed: 5,000 reaction entries. */
function overfull(body?: string): ChatMessage {
  const at = Date.now() - 60_000;
  const reactedAt = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`bob_1 e${i}`, at]));
  return { id: makeUlid(at, randomBytes), chat: 'dm:bob_1', ts: at, from: 'alice', sentAt: at, kind: 'text', body: body ?? 'old', reactedAt };
}

test('one record that fails the check is left out of an export and counted; the rest imports', async () => {
  const alice = await register(server);
  const store = new MemoryStore();
  const history = makeHistory(300, alice.m.nick);
  await fill(store, [...history, overfull()]);
  const exported = await exportHistory(alice.m, store);
  assert.deepEqual([exported.records, exported.dropped], [300, 1]);
  const target = new MemoryStore();
  const r = await importHistory(alice.m, target, exported.file);
  assert.deepEqual([r.records, r.dropped, r.added], [300, 0, 300]);
  assert.equal((await target.all()).length, 300);
});

test('a chunk holding a record that fails the check still merges its other records, and the transfer counts the one left out', async () => {
  const key = await transferKey();
  const neu = fakeDevice(key, 'dev-alice-new');
  const good = makeHistory(200);
  // Written as a sender of an older version did, without checking: one record whole, one in pieces.
  const records = [...good.slice(0, 100), overfull(), ...good.slice(100), overfull(b64(randomBytes(40_000)))];
  const transfer = b64(randomBytes(16));
  const built = await buildTransfer({ key, nick: 'alice', transfer, device: 'dev-alice-new', records });
  // The device asked for history first: an offer is taken only for a request it still waits on.
  await neu.t.request();
  const { nonce } = neu.out.at(-1)!.plain as { nonce: string };
  const offer = { type: 'history-offer' as const, transfer, device: 'dev-alice-new', nonce, total: built.total, records: records.length };
  await neu.t.handle(arrive({ ...offer, tag: await makeTag(key, tagAad('alice', offer)), sentAt: 0 }));
  for (const [seq, c] of built.chunks.entries()) {
    advance(10);
    await neu.t.handle(arrive({ type: 'history-chunk', transfer, device: 'dev-alice-new', seq, total: built.total, data: c.data, sentAt: 0 }));
  }
  assert.deepEqual(refusals(neu), []);
  assert.equal((await neu.store.all()).length, 200);
  const p = neu.t.progress()[0]!;
  assert.deepEqual([p.state, p.records.done, p.records.total, p.dropped], ['done', 202, 202, 2]);

  // A sender of this version leaves such a record out before sealing, and says so.
  const old = fakeDevice(key, 'dev-alice-old');
  await fill(old.store, records);
  const asking = fakeDevice(key, 'dev-alice-new2');
  await asking.t.request();
  await pump(asking, [old]);
  const sent = await old.t.send('dev-alice-new2');
  assert.deepEqual([sent.records.total, sent.dropped], [200, 2]);
});
