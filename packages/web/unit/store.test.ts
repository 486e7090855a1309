/**
 * The web app's IndexedDB store in Node (fake-indexeddb), through the same contract suite as the
 * SDK's MemoryStore, and what it keeps at rest: no row shows a chat, a nick, an id or a text.
 */
import 'fake-indexeddb/auto';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { conversationStoreSuite } from '@svc/testkit/conversation-store-suite';
import { Db, STORES } from '../src/app/idb.js';
import { IdbConversationStore } from '../src/app/conversation-store.js';
import { Tags } from '../src/app/tags.js';

async function keys(): Promise<{ history: CryptoKey; index: CryptoKey }> {
  const history = await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt']);
  const index = await crypto.subtle.generateKey({ name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return { history, index };
}

async function openStore(): Promise<{ db: Db; store: IdbConversationStore; name: string; reopen: () => Promise<IdbConversationStore> }> {
  const k = await keys();
  const name = `svc-test-${randomBytes(6).toString('hex')}`;
  let db = await Db.open(name);
  const store = new IdbConversationStore(db, k.history, new Tags(k.index));
  return {
    db,
    store,
    name,
    reopen: async () => {
      db.close();
      db = await Db.open(name);
      return new IdbConversationStore(db, k.history, new Tags(k.index));
    },
  };
}

conversationStoreSuite('IdbConversationStore', async () => {
  const o = await openStore();
  return { store: o.store, reopen: o.reopen, close: async () => o.db.close() };
});

test('IdbConversationStore keeps no chat, nick, id or text readable at rest', async () => {
  const o = await openStore();
  try {
    const id = '01JXAMPLEMESSAGEID00000000';
    await o.store.put({
      id,
      chat: 'dm:rosalind',
      ts: 5_000,
      from: 'rosalind',
      sentAt: 5_000,
      mid: 'plainmid',
      kind: 'text',
      body: 'the pass is 7319',
    });
    await o.store.putMeta('transfer-state', { peer: 'rosalind' });
    await o.store.outboxPut({
      id: '01JOUTBOXITEM0000000000000',
      chat: 'dm:rosalind',
      plain: { type: 'text', body: 'meet at noon', sentAt: 6_000, mid: 'm2' },
      createdAt: 6_000,
      priority: 'user',
      state: 'waiting',
      attempts: 0,
    });
    const raw: unknown[] = [];
    for (const s of [STORES.messages, STORES.kv, STORES.outbox]) raw.push(...(await o.db.all<unknown>(s)));
    const text = JSON.stringify(raw, (_k, v: unknown) =>
      v instanceof Uint8Array || v instanceof ArrayBuffer ? Buffer.from(v as Uint8Array).toString('latin1') : v,
    );
    for (const secret of ['rosalind', 'the pass is 7319', 'meet at noon', id, 'plainmid', 'transfer-state', 'dm:']) {
      assert.ok(!text.includes(secret), `${secret} is not readable at rest`);
    }
  } finally {
    o.db.close();
  }
});

test('putUnless: a lock another tab saved is never written over, and an unlocked session is saved again', async () => {
  const { db } = await openStore();
  try {
    const isLocked = (v: unknown) => (v as { locked?: boolean } | undefined)?.locked === true;
    assert.equal(await db.putUnless(STORES.kv, 'saved', { nick: 'ann', privateKey: 'k' }, isLocked), true);
    await db.put(STORES.kv, { nick: 'ann', locked: true }, 'saved');
    assert.equal(await db.putUnless(STORES.kv, 'saved', { nick: 'ann', privateKey: 'k' }, isLocked), false);
    assert.deepEqual(await db.get(STORES.kv, 'saved'), { nick: 'ann', locked: true });
  } finally {
    db.close();
  }
});
