/** A server-side failure answers 500 `internal` only; the cause goes to the log with its stack and no request data. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { Client, signup, startServer } from '@svc/testkit/harness';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

test('a failing store answers 500 with code internal and nothing else, and logs the cause without request data', async () => {
  const store = SqliteStore.open(join(mkdtempSync(join(tmpdir(), 'svc-int-')), 'svc.db'));
  const failing = Object.create(store) as SqliteStore;
  let fail = false;
  failing.listContacts = async (nick: string) => {
    if (fail) throw new Error('disk on fire');
    return store.listContacts(nick);
  };
  const server = await startServer({}, { store: failing });
  try {
    const alice = await signup(server);
    fail = true;
    const r = await alice.get('/api/contacts');
    assert.equal(r.status, 500);
    assert.deepEqual(Object.keys(r.json).sort(), ['error', 'message']);
    assert.equal(r.json.error, 'internal');
    assert.ok(!r.text.includes('disk on fire'), 'the cause is not sent to the client');
    assert.equal(r.headers.get('content-type'), 'application/json; charset=utf-8');
    const line = server.logs.find((l) => l.msg === 'internal error') as { err?: { message?: string; stack?: string } } | undefined;
    assert.equal(line?.err?.message, 'disk on fire');
    assert.match(line?.err?.stack ?? '', /disk on fire/);
    assert.ok(!JSON.stringify(line).includes(alice.nick));
    assert.equal((await new Client(server).get('/healthz')).status, 200, 'the service keeps serving');
  } finally {
    await server.close();
  }
});
