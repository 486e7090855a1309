/**
 * The contract of the SDK's ConversationStore, as one suite every implementation runs: the SDK's
 * MemoryStore (packages/sdk/test) and the web app's IndexedDB store (packages/web/unit, in Node
 * over fake-indexeddb). The conversation layer relies on each of these rules; a store that breaks
 * one loses or shows messages wrongly, whichever store it is.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChatId, ChatMessage, ConversationStore, OutboxItem, PendingAction } from '@svc/sdk';

export interface StoreUnderTest {
  store: ConversationStore;
  /** Opens the same storage again, as a reload would (a store in memory returns itself). */
  reopen(): Promise<ConversationStore>;
  close(): Promise<void>;
}

const DM: ChatId = 'dm:bob';
const ROOM: ChatId = 'room:AAAAAAAAAAAAAAAAAAAAAA';

let seq = 0;
/** A ULID-shaped id whose order follows creation. */
const id = (): string => `01J${String(++seq).padStart(23, '0')}`;

function message(chat: ChatId, ts: number, extra: Partial<ChatMessage> = {}): ChatMessage {
  return { id: id(), chat, ts, from: 'bob', sentAt: ts, kind: 'text', body: `at ${ts}`, ...extra };
}

function pending(target: string, o: { chat?: ChatId; from?: string; at?: number; ts?: number } = {}): PendingAction {
  return {
    id: id(),
    target,
    chat: o.chat ?? DM,
    from: o.from ?? 'bob',
    ts: o.ts ?? 1_000,
    at: o.at ?? 1_000,
    plain: { v: 1, type: 'reaction', target, emoji: '👍', op: 'add', sentAt: 1_000 },
  };
}

function outboxItem(chat: ChatId, createdAt: number): OutboxItem {
  return {
    id: id(),
    chat,
    plain: { type: 'text', body: 'hi', sentAt: createdAt, mid: `m${createdAt}` },
    createdAt,
    priority: 'user',
    state: 'waiting',
    attempts: 0,
  };
}

export function conversationStoreSuite(name: string, make: () => Promise<StoreUnderTest>): void {
  const withStore = (title: string, fn: (s: StoreUnderTest) => Promise<void>): void => {
    test(`${name}: ${title}`, async () => {
      const s = await make();
      try {
        await fn(s);
      } finally {
        await s.close();
      }
    });
  };

  withStore('put then get returns the record; put of the same id replaces it; remove drops it', async ({ store }) => {
    const m = message(DM, 5_000);
    await store.put(m);
    assert.deepEqual(await store.get(m.id), m);
    await store.put({ ...m, body: 'edited', editedAt: 6_000 });
    assert.equal((await store.get(m.id))?.body, 'edited');
    assert.equal((await store.all()).length, 1, 'a replaced record is not kept twice');
    await store.remove(m.id);
    assert.equal(await store.get(m.id), undefined);
    await store.remove(m.id); // removing what is gone is no error
  });

  withStore('a record handed back is a copy: changing it changes nothing stored', async ({ store }) => {
    const m = message(DM, 5_000, { reactions: { '👍': ['bob'] } });
    await store.put(m);
    m.reactions!['👍']!.push('carol');
    const got = (await store.get(m.id))!;
    assert.deepEqual(got.reactions, { '👍': ['bob'] });
    got.body = 'changed';
    assert.equal((await store.get(m.id))?.body, 'at 5000');
  });

  withStore('records survive a reopen', async ({ store, reopen }) => {
    const m = message(ROOM, 7_000);
    await store.put(m);
    await store.outboxPut(outboxItem(ROOM, 7_000));
    await store.putMeta('transfer', { step: 2 });
    const again = await reopen();
    assert.deepEqual(await again.get(m.id), m);
    assert.equal((await again.outboxList()).length, 1);
    assert.deepEqual(await again.getMeta('transfer'), { step: 2 });
  });

  withStore('idForMid finds the record of a sender and plaintext id, and only that sender', async ({ store }) => {
    const m = message(DM, 5_000, { mid: 'mid-1' });
    await store.put(m);
    assert.equal(await store.idForMid('bob', 'mid-1'), m.id);
    assert.equal(await store.idForMid('carol', 'mid-1'), undefined);
    assert.equal(await store.idForMid('bob', 'mid-2'), undefined);
  });

  withStore('chat lists one chat in time order, then id; a page is the newest `limit` before `before`', async ({ store }) => {
    const week = 7 * 24 * 3600 * 1000;
    // Times across several weeks, put out of order, with a tie on ts broken by id.
    const times = [3 * week + 5, 10, week + 1, 2 * week, 10, 4 * week];
    const ms = times.map((ts) => message(DM, ts));
    for (const m of [...ms].reverse()) await store.put(m);
    await store.put(message(ROOM, 11));
    const all = await store.chat(DM);
    const order = [...ms].sort((a, b) => a.ts - b.ts || (a.id < b.id ? -1 : 1)).map((m) => m.id);
    assert.deepEqual(
      all.map((m) => m.id),
      order,
    );
    const newest2 = await store.chat(DM, { limit: 2 });
    assert.deepEqual(
      newest2.map((m) => m.id),
      order.slice(-2),
    );
    const third = all[3]!;
    const before = await store.chat(DM, { limit: 2, before: { ts: third.ts, id: third.id } });
    assert.deepEqual(
      before.map((m) => m.id),
      order.slice(1, 3),
    );
    // The tie on ts: `before` the second of the two at ts 10 gives the first only.
    const tie = all.filter((m) => m.ts === 10);
    assert.deepEqual(
      (await store.chat(DM, { before: { ts: 10, id: tie[1]!.id } })).map((m) => m.id),
      [tie[0]!.id],
    );
  });

  withStore('chat reads only the records after `after` (and before `before`), across weeks, and the newest `limit` of them', async ({ store }) => {
    const week = 7 * 24 * 3600 * 1000;
    const times = [10, week - 1, week + 5, week + 5, 2 * week + 1, 3 * week, 5 * week];
    const ms = times.map((ts) => message(DM, ts));
    for (const m of [...ms].reverse()) await store.put(m);
    await store.put(message(ROOM, week + 6));
    const order = [...ms].sort((a, b) => a.ts - b.ts || (a.id < b.id ? -1 : 1));
    const ids = (list: { id: string }[]) => list.map((m) => m.id);
    const at = (i: number) => ({ ts: order[i]!.ts, id: order[i]!.id });
    assert.deepEqual(ids(await store.chat(DM, { after: at(1) })), ids(order.slice(2)), 'after the second: the rest, from later weeks too');
    // The tie on ts: after the first of the two at week + 5 comes the second.
    assert.deepEqual(ids(await store.chat(DM, { after: at(2) })), ids(order.slice(3)));
    assert.deepEqual(ids(await store.chat(DM, { after: at(6) })), [], 'nothing after the newest');
    assert.deepEqual(ids(await store.chat(DM, { after: at(1), before: at(5) })), ids(order.slice(2, 5)));
    assert.deepEqual(ids(await store.chat(DM, { after: at(0), limit: 2 })), ids(order.slice(5)), 'the newest two after the first');
    assert.deepEqual(ids(await store.chat(DM, { after: at(0), before: at(4), limit: 10 })), ids(order.slice(1, 4)));
  });

  withStore('all lists every chat; forgetChat drops one chat and its waiting actions, nothing else', async ({ store }) => {
    const dm = message(DM, 1_000);
    const room = message(ROOM, 2_000);
    await store.put(dm);
    await store.put(room);
    await store.addPending(pending('01JMISSINGDM00000000000000', { chat: DM }));
    await store.addPending(pending('01JMISSINGROOM000000000000', { chat: ROOM }));
    assert.equal((await store.all()).length, 2);
    await store.forgetChat(DM);
    assert.deepEqual(
      (await store.all()).map((m) => m.id),
      [room.id],
    );
    assert.equal(await store.countPending(), 1);
    assert.equal((await store.takePending('01JMISSINGROOM000000000000')).length, 1);
  });

  withStore('takePending returns the actions for a target in time order (ts, then id) and removes them', async ({ store }) => {
    const later = pending('T1', { ts: 3_000 });
    const earlier = pending('T1', { ts: 1_000 });
    const other = pending('T2');
    for (const p of [later, earlier, other]) await store.addPending(p);
    assert.deepEqual(
      (await store.takePending('T1')).map((p) => p.id),
      [earlier.id, later.id],
    );
    assert.deepEqual(await store.takePending('T1'), []);
    assert.equal(await store.countPending(), 1);
  });

  withStore('countPending counts in all, by sender, and by sender and chat', async ({ store }) => {
    await store.addPending(pending('T1', { from: 'bob', chat: DM }));
    await store.addPending(pending('T2', { from: 'bob', chat: ROOM }));
    await store.addPending(pending('T3', { from: 'carol', chat: ROOM }));
    assert.equal(await store.countPending(), 3);
    assert.equal(await store.countPending({ from: 'bob' }), 2);
    assert.equal(await store.countPending({ from: 'bob', chat: ROOM }), 1);
    assert.equal(await store.countPending({ from: 'dave' }), 0);
  });

  withStore('purgePending drops what began to wait before the time and says when the oldest kept began', async ({ store }) => {
    await store.addPending(pending('T1', { at: 100 }));
    await store.addPending(pending('T2', { at: 200 }));
    await store.addPending(pending('T3', { at: 300 }));
    const r = await store.purgePending(250);
    assert.equal(r.removed, 2);
    assert.equal(r.oldest, 300);
    assert.equal(await store.countPending(), 1);
    assert.deepEqual(await store.purgePending(250), { removed: 0, oldest: 300 });
  });

  withStore('the outbox keeps items by id: put replaces, remove drops', async ({ store }) => {
    const a = outboxItem(DM, 1);
    const b = outboxItem(ROOM, 2);
    await store.outboxPut(a);
    await store.outboxPut(b);
    await store.outboxPut({ ...a, attempts: 3, state: 'failed', note: 'refused' });
    const list = await store.outboxList();
    assert.equal(list.length, 2);
    assert.deepEqual(
      list.find((i) => i.id === a.id),
      { ...a, attempts: 3, state: 'failed', note: 'refused' },
    );
    await store.outboxRemove(a.id);
    assert.deepEqual(
      (await store.outboxList()).map((i) => i.id),
      [b.id],
    );
  });

  withStore('named values hold JSON values; a missing one is undefined; remove drops it', async ({ store }) => {
    assert.equal(await store.getMeta('nothing'), undefined);
    await store.putMeta('state', { a: [1, 2], b: 'x', c: null });
    assert.deepEqual(await store.getMeta('state'), { a: [1, 2], b: 'x', c: null });
    await store.putMeta('state', 7);
    assert.equal(await store.getMeta('state'), 7);
    await store.removeMeta('state');
    assert.equal(await store.getMeta('state'), undefined);
  });
}
