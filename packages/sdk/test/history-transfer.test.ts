/**
 * The history transfer between two devices of one account (conversation/transfer.ts), with the
 * tests playing the service: everything arrives in order, each chunk is checked, and a replayed,
 * reordered, truncated or forged one is refused with nothing of it imported; either side resumes
 * after a reload; the history arrives as it stands.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { b64, unb64 } from '../src/bytes.js';
import { chunkCapacity, payloads } from '../src/conversation/transfer-wire.js';
import { makeUlid } from '@svc/protocol';
import { encodePlaintext, MAX_PADDED_BYTES, randomBytes, type ChatMessage, type HistoryChunkPlain, type PlainInput } from '../src/index.js';
import { advance, arrive, CARRIER, fakeDevice, fill, makeHistory, pump, refusals, transferKey, type FakeDevice } from './history-fixtures.js';

const OLD = 'dev-alice-old';
const NEW = 'dev-alice-new';

/** An old device holding `n` records and a new one that asked for them; the old one has said "Send history". */
async function started(n: number): Promise<{ old: FakeDevice; neu: FakeDevice; key: CryptoKey; history: Awaited<ReturnType<typeof makeHistory>> }> {
  const key = await transferKey();
  const old = fakeDevice(key, OLD);
  const neu = fakeDevice(key, NEW);
  const history = makeHistory(n);
  await fill(old.store, history);
  await neu.t.request();
  await pump(neu, [old]);
  assert.deepEqual(
    old.t.requests.map((r) => r.device),
    [NEW],
    'the old device is asked',
  );
  await old.t.send(NEW);
  assert.deepEqual(old.t.requests, [], 'the request is answered');
  return { old, neu, key, history };
}

const chunks = (d: FakeDevice): HistoryChunkPlain[] => d.out.map((i) => i.plain).filter((p): p is HistoryChunkPlain => p.type === 'history-chunk');

test('a new device receives the whole history as it stands: texts, replies, reactions, edits, deletions, in chunks that fit one message', async () => {
  const { old, neu } = await started(1500);
  const sizes = old.out.map((i) => encodePlaintext(i.plain).length);
  assert.ok(
    sizes.every((s) => s <= MAX_PADDED_BYTES),
    'every message fits the 32 KiB body limit',
  );
  const n = chunks(old).length;
  assert.ok(n >= 3 && n <= 8, `1500 records in a few chunks (${n})`);
  await pump(old, [neu]);
  assert.deepEqual(refusals(neu), []);
  assert.deepEqual(await neu.store.all(), await old.store.all(), 'the same records, as they stand');
  const got = neu.t.progress()[0]!;
  assert.deepEqual([got.role, got.state, got.chunks, got.records], ['receive', 'done', { done: n, total: n }, { done: 1500, total: 1500 }]);
  // The receiver's final ack lets the sender forget the chunks.
  await pump(neu, [old]);
  const sent = old.t.progress()[0]!;
  assert.deepEqual([sent.role, sent.state, sent.chunks.done, sent.records.done], ['send', 'done', n, 1500]);
  assert.equal(await old.store.getMeta(`transfer.chunks.${sent.transfer}`), undefined);

  // A second transfer later carries a record too large for one chunk, in pieces.
  const at = Date.now();
  const big: ChatMessage = {
    id: makeUlid(at, randomBytes),
    chat: 'dm:carol',
    ts: at,
    from: 'carol',
    sentAt: at,
    kind: 'text',
    body: b64(randomBytes(20_000)) + '😀',
  };
  await old.store.put(big);
  await neu.t.request();
  await pump(neu, [old]);
  await old.t.send(NEW);
  await pump(old, [neu]);
  assert.deepEqual(refusals(neu), []);
  assert.equal((await neu.store.get(big.id))?.body, big.body, 'a record larger than a chunk arrives whole');
});

test("the receiver is done with the last chunk, without waiting for the sender's history-done; its ack takes that history-done out of the sender's outbox", async () => {
  // The sender's outbox paces the transfer under the message budget, so its closing message can
  // wait a minute after the last chunk went: the receiver holds everything already.
  const { old, neu, history } = await started(900);
  const n = chunks(old).length;
  await pump(old, [neu], 1 + n); // the offer and every chunk, not the history-done
  const done = old.out.find((i) => i.plain.type === 'history-done')!.plain;
  assert.equal(old.out.length, 1, 'only the history-done still waits');
  const got = neu.t.progress()[0]!;
  assert.deepEqual([got.state, got.records.done], ['done', history.length]);
  const ack = neu.out.at(-1)!.plain;
  assert.deepEqual([ack.type, 'next' in ack && ack.next], ['history-ack', n]);
  await pump(neu, [old]);
  assert.equal(old.out.length, 0, 'the history-done is dropped: it would only spend the budget');
  assert.equal(old.t.progress()[0]!.state, 'done');
  // A history-done that went out before the ack came confirms the chain and changes nothing; a second one is a replay.
  await neu.t.handle(arrive(done));
  assert.deepEqual(refusals(neu), []);
  assert.equal(neu.out.length, 0, 'no second ack');
  await neu.t.handle(arrive(done));
  assert.deepEqual(refusals(neu), ['history-done:replayed']);
  assert.equal((await neu.store.all()).length, history.length);
});

test('a replayed chunk is refused and imports nothing; so is a chunk of a finished transfer', async () => {
  const { old, neu } = await started(900);
  const went = await pump(old, [neu], 2); // offer, chunk 0
  const chunk0 = went[1]!;
  // The person removes a record that chunk 0 brought: a replay that imported would bring it back.
  const victim = (await neu.store.all())[0]!;
  await neu.store.remove(victim.id);
  await neu.t.handle(arrive(chunk0));
  assert.deepEqual(refusals(neu), ['history-chunk:replayed']);
  assert.equal(await neu.store.get(victim.id), undefined, 'nothing imported');
  await pump(old, [neu]);
  assert.equal(neu.t.progress()[0]!.state, 'done');
  const all = await neu.store.all();
  await neu.t.handle(arrive(chunk0));
  assert.deepEqual(refusals(neu), ['history-chunk:replayed', 'history-chunk:replayed']);
  assert.deepEqual(await neu.store.all(), all, 'nothing changes');
});

test('a chunk out of order is refused, imports nothing, and the receiver asks for the one it expects', async () => {
  const { old, neu, history } = await started(1200);
  await pump(old, [neu], 1); // the offer
  const skipped = old.out.shift()!; // chunk 0 is lost on the way
  assert.equal(skipped.plain.type, 'history-chunk');
  await pump(old, [neu], 1); // chunk 1 comes first
  assert.deepEqual(refusals(neu), ['history-chunk:out of order']);
  assert.deepEqual(await neu.store.all(), [], 'nothing imported');
  const ack = neu.out.at(-1)!.plain;
  assert.deepEqual([ack.type, 'next' in ack && ack.next], ['history-ack', 0]);
  await pump(neu, [old]); // the sender starts again from chunk 0
  await pump(old, [neu]);
  assert.equal((await neu.store.all()).length, history.length);
  assert.equal(neu.t.progress()[0]!.state, 'done');
});

test('a truncated chunk, or a transfer cut short, is refused and imports nothing', async () => {
  const { old, neu } = await started(900);
  await pump(old, [neu], 1);
  const c0 = old.out.shift()!.plain as HistoryChunkPlain;
  const cut = b64(unb64(c0.data).subarray(0, unb64(c0.data).length - 40));
  await neu.t.handle(arrive({ ...c0, data: cut }));
  assert.deepEqual(refusals(neu), ['history-chunk:forged or damaged']);
  assert.deepEqual(await neu.store.all(), []);
  // The rest of the chunks never come, only the end: the receiver asks for chunk 0 again.
  const done = old.out.find((i) => i.plain.type === 'history-done')!.plain;
  await neu.t.handle(arrive(done));
  assert.deepEqual(refusals(neu).at(-1), 'history-done:chunks missing');
  assert.equal(neu.t.progress()[0]!.state, 'active');
  assert.deepEqual(await neu.store.all(), []);
});

test('a forged chunk is refused and imports nothing: another key, a flipped bit, another sender, another room, a swapped field', async () => {
  const { old, neu } = await started(900);
  await pump(old, [neu], 1);
  const c0 = old.out[0]!.plain as HistoryChunkPlain;
  const other = await started(900);
  await pump(other.old, [other.neu], 1);
  const foreign = other.old.out[0]!.plain as HistoryChunkPlain;
  const flipped = unb64(c0.data);
  flipped[flipped.length - 100]! ^= 1;
  const tries: [PlainInput, Parameters<typeof arrive>[1]][] = [
    [{ ...foreign, transfer: c0.transfer }, {}],
    [{ ...c0, data: b64(flipped) }, {}],
    [c0, { from: 'mallory' }],
    [c0, { chat: 'room:OtherRoomXXXXXXXXXXXXw' }],
    [{ ...c0, total: c0.total + 1 }, {}],
  ];
  for (const [p, o] of tries) await neu.t.handle(arrive(p, o));
  assert.deepEqual(refusals(neu), [
    'history-chunk:forged or damaged',
    'history-chunk:forged or damaged',
    'history-chunk:not from a device of this account',
    'history-chunk:not from a device of this account',
    'history-chunk:forged',
  ]);
  assert.deepEqual(await neu.store.all(), []);
  // A control message with a bad tag is refused too: a forged offer does not take the transfer over.
  const offer = {
    type: 'history-offer' as const,
    transfer: c0.transfer.replace(/^./, (ch) => (ch === 'A' ? 'B' : 'A')),
    device: NEW,
    nonce: b64(new Uint8Array(16)),
    total: 1,
    records: 1,
    tag: b64(new Uint8Array(28)),
    sentAt: 1,
  };
  await neu.t.handle(arrive(offer));
  assert.deepEqual(refusals(neu).at(-1), 'history-offer:forged');
  await pump(old, [neu]);
  assert.equal(neu.t.progress()[0]!.state, 'done', 'the real transfer goes on');
});

test('a transfer resumes after the receiver reloads: it acks the next chunk it expects and the sender goes on from there', async () => {
  const { old, neu, key, history } = await started(1500);
  await pump(old, [neu], 3); // offer, chunks 0 and 1
  const lost = old.out.splice(0, 2); // two chunks that reached a device that was closing, and were lost
  assert.ok(lost.every((i) => i.plain.type === 'history-chunk'));
  const again = fakeDevice(key, NEW, { store: neu.store, out: neu.out });
  await again.t.load();
  const ack = again.out.at(-1)!.plain;
  assert.deepEqual([ack.type, 'next' in ack && ack.next], ['history-ack', 2]);
  await pump(again, [old]);
  assert.equal(chunks(old)[0]!.seq, 2, 'the sender goes on from chunk 2');
  await pump(old, [again]);
  assert.deepEqual(refusals(again), []);
  assert.equal((await again.store.all()).length, history.length);
  assert.equal(again.t.progress()[0]!.state, 'done');
});

test('a transfer resumes after the sender reloads: its outbox and state are kept, and it finishes', async () => {
  const { old, neu, key, history } = await started(1500);
  await pump(old, [neu], 2);
  advance(5_000);
  const again = fakeDevice(key, OLD, { store: old.store, out: old.out });
  await again.t.load();
  assert.equal(again.t.progress()[0]!.chunks.done, 1, 'it remembers what went');
  await pump(again, [neu]);
  assert.equal((await neu.store.all()).length, history.length);
  await pump(neu, [again]);
  assert.equal(again.t.progress()[0]!.state, 'done');
});

test("another device's transfer passes by: chunks for a different device are neither imported nor refused", async () => {
  const { old, neu, key } = await started(300);
  const third = fakeDevice(key, 'dev-alice-third');
  await pump(old, [neu, third]);
  assert.deepEqual([refusals(third), await third.store.all(), third.t.progress()], [[], [], []]);
  assert.equal(neu.t.progress()[0]!.state, 'done');
});

test('10,000 messages fit in a few dozen chunks, so they arrive in under 3 minutes at 30 messages a minute', (t) => {
  const records = makeHistory(10_000);
  const parts = payloads(records.reverse(), chunkCapacity(NEW));
  const bytes = parts.reduce((a, p) => a + p.bytes.length, 0);
  // The bulk budget is 20 a minute (30 less a reserve of 10): offer, chunks and done go 20 at a
  // time, one window (61 s) apart.
  const messages = parts.length + 2;
  const seconds = (Math.ceil(messages / 20) - 1) * 61;
  t.diagnostic(
    `${records.length} records → ${parts.length} chunks of about ${Math.round(records.length / parts.length)} records, ${(bytes / records.length).toFixed(1)} compressed bytes per record; ${messages} messages, the last leaving after about ${seconds} s`,
  );
  assert.ok(seconds < 180, `${messages} messages go within three minutes`);
  assert.ok(records.length / parts.length >= 200, 'several hundred records per chunk');
});

test('the carrier chat is the only one a transfer uses', async () => {
  const { old } = await started(10);
  assert.ok(old.out.every((i) => i.chat === CARRIER && i.priority === 'bulk'));
});
