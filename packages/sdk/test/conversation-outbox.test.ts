/**
 * The outbox and the pacer (conversation/outbox.ts, pacer.ts) against a scripted service: order
 * within a chat, 429s waited out and never shown as failures, network failures retried when the
 * connection is back, permanent refusals shown as "Not sent" until Retry, a late retry under a new
 * envelope id with the same plaintext id, receipts after the person's own messages and merged,
 * and what was queued survives a reload.
 */
import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { makeUlid } from '@svc/protocol';
import { MemoryStore, Outbox, Pacer, randomBytes, SdkError, type ChatId, type OutboxItem, type PlainInput } from '../src/index.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every outbox a test made is stopped after it, so no timer outlives its test. */
const boxes: Outbox[] = [];
afterEach(() => {
  for (const b of boxes.splice(0)) b.stop();
});

function rig(o: { limit?: number; answer?: (chat: ChatId, plain: PlainInput, id: string) => Promise<number> | number } = {}) {
  let clock = 1_800_000_000_000;
  const now = () => clock;
  const sent: { chat: ChatId; plain: PlainInput; id: string }[] = [];
  const updates: OutboxItem[] = [];
  const renamed: [string, string][] = [];
  const store = new MemoryStore();
  const pacer = new Pacer(o.limit ?? 30, now);
  const box = new Outbox({
    store,
    pacer,
    now,
    newId: () => makeUlid(clock, randomBytes),
    send: async (chat, plain, so) => {
      const ts = await (o.answer ?? (() => clock))(chat, plain, so.id);
      sent.push({ chat, plain, id: so.id });
      return { id: so.id, ts };
    },
    onSent: async () => undefined,
    onUpdate: async (i) => void updates.push(structuredClone(i)),
    onNewId: async (old, i) => void renamed.push([old, i.id]),
  });
  boxes.push(box);
  return { box, store, pacer, sent, updates, renamed, advance: (ms: number) => (clock += ms), now };
}

const text = (body: string): PlainInput => ({ type: 'text', body, sentAt: 1, mid: 'M'.repeat(22) });
async function settle(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !cond(); i++) await sleep(5);
  assert.ok(cond(), what);
}

test('messages of a chat go out in the order they were written, each once', async () => {
  const r = rig();
  for (let i = 0; i < 5; i++) await r.box.add('dm:bob', text(`m${i}`));
  await settle(() => r.sent.length === 5, 'five sent');
  assert.deepEqual(
    r.sent.map((s) => (s.plain.type === 'text' ? s.plain.body : '')),
    ['m0', 'm1', 'm2', 'm3', 'm4'],
  );
  assert.deepEqual(await r.store.outboxList(), [], 'the outbox is empty once the service accepted everything');
});

test('past the budget messages wait in the outbox, with a countdown, and go as the budget frees: none fails', async () => {
  const r = rig({ limit: 3 });
  const items = [];
  for (let i = 0; i < 5; i++) items.push(await r.box.add('dm:bob', text(`m${i}`)));
  await settle(() => r.sent.length === 3, 'the budget of three used');
  await sleep(30);
  assert.equal(r.sent.length, 3, 'the fourth waits');
  const wait4 = r.box.waitMs(items[3]!.id)!;
  const wait5 = r.box.waitMs(items[4]!.id)!;
  assert.ok(wait4 > 55_000 && wait4 <= 61_000, `the fourth waits about a minute (${wait4})`);
  assert.ok(wait5 >= wait4, 'the fifth no sooner than the fourth');
  r.advance(61_001);
  r.box.kick();
  await settle(() => r.sent.length === 5, 'all five sent');
  assert.ok(r.updates.every((u) => u.state !== 'failed'));
});

test('a 429 is waited out for Retry-After and the message goes again; it is never marked failed', async () => {
  let refuse = 1;
  const r = rig({
    answer: () => {
      if (refuse-- > 0) throw new SdkError('rate_limited', { retryAfter: 7 });
      return 5;
    },
  });
  const item = await r.box.add('room:r1', text('patient'));
  await sleep(30);
  assert.equal(r.sent.length, 0);
  const w = r.box.waitMs(item.id)!;
  assert.ok(w > 6_000 && w <= 7_000, `waits Retry-After (${w})`);
  assert.equal(r.updates.at(-1)?.state, 'waiting');
  r.advance(7_001);
  r.box.kick();
  await settle(() => r.sent.length === 1, 'sent after the wait');
  assert.equal(r.pacer.used, 1, 'the refused attempt did not count');
});

test('a network failure keeps the message waiting and it goes when the connection is back', async () => {
  let down = true;
  const r = rig({
    answer: () => {
      if (down) throw new SdkError('network');
      return 1;
    },
  });
  await r.box.add('dm:bob', text('offline'));
  await sleep(30);
  assert.equal(r.sent.length, 0);
  assert.equal((await r.store.outboxList()).length, 1, 'still in the outbox');
  down = false;
  r.box.online();
  await settle(() => r.sent.length === 1, 'sent once online');
});

test('a permanent refusal shows as failed until Retry; a held key waits until online()', async () => {
  let code: 'not_member' | 'untrusted_key' | null = 'not_member';
  const r = rig({
    answer: () => {
      if (code) throw new SdkError(code);
      return 1;
    },
  });
  const a = await r.box.add('room:r1', text('refused'));
  await settle(() => r.updates.some((u) => u.id === a.id && u.state === 'failed'), 'marked failed');
  code = 'untrusted_key';
  const b = await r.box.add('dm:bob', text('held'));
  await settle(() => r.updates.some((u) => u.id === b.id && u.state === 'held'), 'held');
  code = null;
  await r.box.retry(a.id);
  await settle(() => r.sent.length === 1, 'the retried one goes');
  r.box.online();
  await settle(() => r.sent.length === 2, 'the held one goes after online()');
});

test('a retry past four minutes goes under a new envelope id with the same plaintext id', async () => {
  let fail = true;
  const r = rig({
    answer: () => {
      if (fail) throw new SdkError('network');
      return 1;
    },
  });
  const item = await r.box.add('dm:bob', text('late'));
  const firstId = item.id; // the outbox renames its item in place
  await sleep(20);
  fail = false;
  r.advance(5 * 60_000);
  r.box.online();
  await settle(() => r.sent.length === 1, 'sent');
  assert.notEqual(r.sent[0]!.id, firstId);
  assert.deepEqual(r.renamed, [[firstId, r.sent[0]!.id]]);
  assert.equal(r.sent[0]!.plain.mid, 'M'.repeat(22));
});

test('receipts go after the person’s own messages, merged per chat, and only above the reserve', async () => {
  const r = rig({ limit: 12 });
  r.box.receipt('dm:bob', ['01JD0000000000000000000001'], 'delivered');
  r.box.receipt('dm:bob', ['01JD0000000000000000000002'], 'delivered');
  r.box.receipt('dm:bob', ['01JD0000000000000000000001'], 'read');
  for (let i = 0; i < 3; i++) await r.box.add('dm:bob', text(`own${i}`));
  r.advance(2_000);
  r.box.kick();
  await settle(() => r.sent.length === 5, 'three texts and two receipts');
  assert.deepEqual(
    r.sent.map((s) => (s.plain.type === 'receipt' ? `${s.plain.status}:${s.plain.ids.join(',')}` : s.plain.type)),
    ['text', 'text', 'text', 'delivered:01JD0000000000000000000002', 'read:01JD0000000000000000000001'],
  );
  // Fill the budget up to the reserve: receipts stop there, the person's texts do not.
  for (let i = 0; i < 3; i++) await r.box.add('dm:bob', text(`more${i}`));
  await settle(() => r.sent.length === 8, 'eight sent');
  r.box.receipt('dm:bob', ['01JD0000000000000000000003'], 'read');
  r.advance(2_000);
  r.box.kick();
  await sleep(30);
  assert.equal(r.sent.length, 8, 'a receipt does not take the reserve (8 of 12 used, 4 kept)');
  await r.box.add('dm:bob', text('still goes'));
  await settle(() => r.sent.length === 9, 'the person’s message uses the reserve');
});

test('bulk sends (the history transfer) go after the person’s messages and after a receipt that is due', async () => {
  const r = rig({ limit: 3 }); // bulk and receipts: 2 of the 3 (a reserve of 1 for the person)
  for (let i = 0; i < 4; i++) await r.box.add('room:devices', text(`chunk${i}`), { priority: 'bulk' });
  // Each item is stamped a millisecond after the one before; this clock only moves when told.
  r.advance(10);
  r.box.kick();
  await settle(() => r.sent.length === 2, 'the bulk share of the budget used');
  await sleep(30);
  assert.equal(r.sent.length, 2, 'no more than the bulk share');
  await r.box.add('dm:bob', text('mine'));
  await settle(() => r.sent.length === 3, 'the person’s message takes the reserve at once');
  r.box.receipt('dm:bob', ['01JD0000000000000000000001'], 'read');
  r.advance(61_001);
  r.box.kick();
  await settle(() => r.sent.length === 5, 'the next window');
  assert.deepEqual(
    r.sent.map((s) => (s.plain.type === 'text' ? s.plain.body : s.plain.type)),
    ['chunk0', 'chunk1', 'mine', 'receipt', 'chunk2'],
  );
});

test('a receipt that is being sent takes no more ids: those read meanwhile go in the next one', async () => {
  let release: () => void = () => undefined;
  /** The receipt ids as they left, copied when the send began (the plaintext is sealed then). */
  const wire: string[][] = [];
  const r = rig({
    answer: async (_chat, plain) => {
      if (plain.type !== 'receipt') return r.now();
      wire.push([...plain.ids]);
      // The first receipt is on its way while another message is read.
      if (wire.length === 1) await new Promise<void>((ok) => (release = ok));
      return r.now();
    },
  });
  r.box.receipt('dm:bob', ['01JD0000000000000000000001'], 'read');
  r.advance(2_000);
  r.box.kick();
  await settle(() => wire.length === 1, 'the first receipt on its way');
  r.box.receipt('dm:bob', ['01JD0000000000000000000002'], 'read');
  release();
  await settle(() => r.sent.length === 1, 'the first receipt sent');
  r.advance(2_000);
  r.box.kick();
  await settle(() => wire.length === 2, 'a second receipt');
  assert.deepEqual(wire, [['01JD0000000000000000000001'], ['01JD0000000000000000000002']]);
});

test('what was queued survives a reload: a new outbox over the same store sends it, in order', async () => {
  const r = rig({
    answer: () => {
      throw new SdkError('network');
    },
  });
  await r.box.add('dm:bob', text('first'));
  await r.box.add('dm:bob', text('second'));
  r.box.stop();
  const again = rig();
  for (const i of await r.store.outboxList()) await again.store.outboxPut(i);
  await again.box.load();
  await settle(() => again.sent.length === 2, 'both sent after the reload');
  assert.deepEqual(
    again.sent.map((s) => (s.plain.type === 'text' ? s.plain.body : '')),
    ['first', 'second'],
  );
});

test('a chat being left gets nothing more: what waits for it is dropped, later receipts ignored, later messages refused', async () => {
  let down = true;
  const r = rig({
    answer: () => {
      if (down) throw new SdkError('network');
      return 1;
    },
  });
  await r.box.add('room:r1', text('unsent'));
  await r.box.add('dm:bob', text('elsewhere'));
  r.box.receipt('room:r1', ['01JD0000000000000000000001'], 'delivered');
  r.box.receipt('dm:bob', ['01JD0000000000000000000002'], 'read');
  await r.box.close('room:r1');
  assert.deepEqual(
    r.box.pending.map((i) => i.chat),
    ['dm:bob'],
    "the left room's message is out of the outbox",
  );
  assert.deepEqual(
    (await r.store.outboxList()).map((i) => i.chat),
    ['dm:bob'],
    '…and out of the store',
  );
  r.box.receipt('room:r1', ['01JD0000000000000000000003'], 'read');
  await assert.rejects(r.box.add('room:r1', text('too late')), (e) => e instanceof SdkError && e.code === 'not_member');
  down = false;
  r.advance(2_000);
  r.box.online();
  await settle(() => r.sent.length === 2, 'the other chat’s message and receipt sent');
  await sleep(30);
  assert.deepEqual(
    r.sent.map((s) => s.chat),
    ['dm:bob', 'dm:bob'],
    'nothing went to the left room',
  );
});

test('closing a chat waits for a send to it that is under way, and that send is not tried again', async () => {
  let release!: () => void;
  let calls = 0;
  const r = rig({
    answer: async () => {
      calls++;
      await new Promise<void>((ok) => (release = ok));
      throw new SdkError('not_member');
    },
  });
  await r.box.add('room:r1', text('on its way'));
  await settle(() => calls === 1, 'the send under way');
  let closed = false;
  const closing = r.box.close('room:r1').then(() => (closed = true));
  await sleep(20);
  assert.equal(closed, false, 'close waits for the send under way');
  release();
  await closing;
  await sleep(30);
  assert.equal(calls, 1, 'not tried again');
  assert.deepEqual(await r.store.outboxList(), [], 'dropped, not kept as failed');
  assert.ok(!r.updates.some((u) => u.state === 'failed'), 'never shown as "Not sent"');
});

test('a chat reopened (the leave did not happen) is written to again', async () => {
  const r = rig();
  await r.box.close('room:r1');
  r.box.reopen('room:r1');
  await r.box.add('room:r1', text('still here'));
  r.box.receipt('room:r1', ['01JD0000000000000000000001'], 'read');
  r.advance(2_000);
  r.box.kick();
  await settle(() => r.sent.length === 2, 'the message and the receipt sent');
});
