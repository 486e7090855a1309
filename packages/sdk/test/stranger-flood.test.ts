/**
 * A stranger cannot fill a device: real accounts on the real service send real envelopes naming
 * made-up message ids (receipts of 256 ids, reactions, long edits, deletions), and the victim's
 * store grows by no more than the stranger's small budget of waiting actions. Messaging goes on:
 * a real message afterwards arrives and is shown.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { serialize } from 'node:v8';
import { makeUlid } from '@svc/protocol';
import { b64 } from '../src/bytes.js';
import {
  Conversations,
  MAX_PADDED_BYTES,
  MAX_RECEIPT_IDS,
  MemoryStore,
  randomBytes,
  WAITING_PER_STRANGER,
  type Change,
  type PlainInput,
} from '../src/index.js';
import { register, sleep, startServer, type Device, type TestServer } from './server.js';

let server: TestServer;
before(async () => {
  server = await startServer({}, {}, 'sqlite');
});
after(async () => {
  await server.close();
});

/** What one waiting row may take at most: an edit's text (a whole message) and its bookkeeping. */
const ROW_MAX_BYTES = MAX_PADDED_BYTES + 1024;
const BOUND = WAITING_PER_STRANGER * ROW_MAX_BYTES;

async function until(pred: () => boolean, what: string, ms = 120_000): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

const newId = (): string => makeUlid(Date.now(), randomBytes);
const mid = (): string => b64(randomBytes(16));

function floodOf(sender: Device, rounds: number): PlainInput[] {
  const now = sender.m.api.now();
  const out: PlainInput[] = [];
  for (let i = 0; i < rounds; i++) {
    out.push({ type: 'receipt', ids: Array.from({ length: MAX_RECEIPT_IDS }, newId), status: 'read', sentAt: now, mid: mid() });
    out.push({ type: 'reaction', target: newId(), emoji: '😈', op: 'add', sentAt: now, mid: mid() });
    out.push({ type: 'edit', target: newId(), body: 'x'.repeat(MAX_PADDED_BYTES - 600), sentAt: now, mid: mid() });
    out.push({ type: 'delete', target: newId(), sentAt: now, mid: mid() });
  }
  return out;
}

test(
  `a stranger's flood of receipts, reactions, edits and deletes for unknown ids stores at most ${BOUND.toLocaleString('en')} bytes on the device, and messaging goes on`,
  { timeout: 300_000 },
  async (t) => {
    const alice = await register(server);
    const mallory = await register(server);
    const store = new MemoryStore();
    const conv = new Conversations({ messenger: alice.m, store });
    const changes: Change[] = [];
    conv.on((c) => changes.push(c));
    let received = 0;
    let ready = 0;
    const stream = alice.m.events({
      onMsg: async (env) => {
        await conv.receive(env);
        received++;
      },
      onReady: () => void ready++,
      backoffMs: { initial: 50, max: 200 },
    });
    stream.start();
    try {
      await until(() => ready > 0, 'ready');
      await conv.load();
      const empty = serialize(store).length;

      const flood = floodOf(mallory, 20);
      for (let i = 0; i < flood.length; i += 10) await Promise.all(flood.slice(i, i + 10).map((p) => mallory.m.send(`dm:${alice.m.nick}`, p)));
      await until(() => received >= flood.length, `${flood.length} envelopes`);

      const waiting = await store.countPending();
      const grown = serialize(store).length - empty;
      t.diagnostic(`${flood.length} envelopes naming ${20 * (MAX_RECEIPT_IDS + 3)} made-up ids: ${waiting} rows wait, ${grown} bytes stored`);
      assert.ok(waiting <= WAITING_PER_STRANGER, `${waiting} rows wait`);
      assert.ok(grown <= BOUND, `${grown} bytes stored`);

      // A real message afterwards arrives, is stored and shown (a listener hears of it as added).
      const sent = await mallory.m.sendDm(alice.m.nick, 'hello after all that');
      await until(() => changes.some((c) => c.added?.id === sent.id), 'the real message');
      const shown = changes.find((c) => c.added?.id === sent.id)!.added!;
      assert.deepEqual([shown.kind, shown.body, shown.from], ['text', 'hello after all that', mallory.m.nick]);
      assert.equal((await store.get(sent.id))?.body, 'hello after all that');
    } finally {
      conv.stop();
      await stream.close();
    }
  },
);
