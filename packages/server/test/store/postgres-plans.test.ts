/**
 * The service's PostgreSQL connections plan its keyed statements by their index at every table
 * size (db.ts, SESSION_SETTINGS): on a small table the planner would otherwise read the whole
 * table and filter it by the batch's keys, at several times the cost of the index probes
 * (docs/POSTGRES.md, "Plans"). An operator's own `options` in the URL still win.
 */
import { describe, test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { dropSchema, freshSchema, spyQueries, testPgUrl } from '@svc/testkit/postgres';
import { NOW, account, wrapped } from './suite.js';
import { id16, iv, ct, ulid } from '@svc/testkit/harness';
import type { SendInput } from '../../src/store/types.js';

/** The first statement sent by `fn` through a named prepared statement, with its values. */
async function firstPrepared(fn: () => Promise<unknown>): Promise<{ text: string; values: unknown[] }> {
  let seen: { text: string; values: unknown[] } | undefined;
  await spyQueries((q) => {
    if (seen === undefined && q.name) seen = { text: q.text, values: q.values ?? [] };
  }, fn);
  assert.ok(seen, 'no prepared statement was sent');
  return seen;
}

/** Every node type of an EXPLAIN (FORMAT JSON) plan. */
function nodes(plan: { 'Node Type': string; Plans?: unknown[] }): string[] {
  return [plan['Node Type'], ...(plan.Plans ?? []).flatMap((p) => nodes(p as typeof plan))];
}

/**
 * Has auto_explain print the plan of every statement, those inside functions too, to the store's
 * only connection as a notice, and returns the list the notices go to.
 */
async function explainEverything(store: PostgresStore): Promise<string[]> {
  const c = await store.pool.connect();
  const notices: string[] = [];
  c.on('notice', (n) => notices.push(n.message ?? ''));
  await c.query(
    "LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on; SET auto_explain.log_level = notice",
  );
  c.release();
  return notices;
}

/** The plans of the statements inside the send functions: the calls themselves are written with their values. */
function innerStatements(notices: string[]): string[] {
  return notices.filter((m) => /Query Text:/.test(m) && !/send_facts\(|send_write\(|BEGIN|COMMIT/.test(m.split('Query Text:')[1]!.split('\n')[0]!));
}

describe('store: postgres, how its statements are planned', () => {
  let schema: string;
  let store: PostgresStore;
  beforeEach(async () => {
    schema = await freshSchema();
  });
  afterEach(async () => {
    await store.close();
    await dropSchema(schema);
  });

  test('every connection of the store has sequential scans and JIT off, generic plans and its schema as search_path', async () => {
    store = await PostgresStore.open(testPgUrl, { schema, max: 2 });
    const r = await store.pool.query<{ seq: string; jit: string; plans: string; path: string }>(
      "SELECT current_setting('enable_seqscan') AS seq, current_setting('jit') AS jit, current_setting('plan_cache_mode') AS plans, current_setting('search_path') AS path",
    );
    assert.deepEqual(r.rows[0], { seq: 'off', jit: 'off', plans: 'force_generic_plan', path: schema });
  });

  test('the statements inside a batch of sends run on generic plans that probe indexes: none is planned for its values, none scans a table', async () => {
    store = await PostgresStore.open(testPgUrl, { schema, max: 1 });
    await store.registerAccount(account('alice'));
    await store.registerAccount(account('bob'));
    await store.addDevice('alice', 'a-device-1', NOW);
    await store.addDevice('bob', 'b-device-1', NOW);
    const roomId = id16();
    const keyId = id16();
    assert.ok('room' in (await store.createRoom({ id: roomId, name: 'Room', owner: 'alice', keyId, keys: [wrapped('alice')], now: NOW })));
    const notices = await explainEverything(store);
    const send = (to: SendInput['to'], key: string) =>
      store.sendMessage({ id: ulid(NOW), from: 'alice', to, keyId: key, iv: iv(), ct: ct(), senderDevice: 'a-device-1', now: NOW });
    const results = await Promise.all([send({ dm: 'bob' }, 'dm'), send({ room: roomId }, keyId), send({ dm: 'bob' }, 'dm')]);
    assert.ok(results.every((r) => 'status' in r && r.status === 'queued'));
    const inner = innerStatements(notices);
    assert.ok(inner.length >= 8, `${inner.length} statements inside the functions:\n${notices.join('\n')}`);
    for (const m of inner) {
      assert.ok(!/'alice'|'bob'|'a-device-1'/.test(m), `planned for its values:\n${m}`);
      assert.ok(!/Seq Scan/.test(m), `scans a table:\n${m}`);
    }
  });

  test('a batch of DMs between contacts runs no room statement and no first-contact statement inside send_facts; a first DM runs the latter', async () => {
    store = await PostgresStore.open(testPgUrl, { schema, max: 1 });
    for (const n of ['alice', 'bob', 'carol']) {
      await store.registerAccount(account(n));
      await store.addDevice(n, `${n[0]}-device-1`, NOW);
    }
    const send = (from: string, to: string) =>
      store.sendMessage({ id: ulid(NOW), from, to: { dm: to }, keyId: 'dm', iv: iv(), ct: ct(), senderDevice: `${from[0]}-device-1`, now: NOW });
    // The first DMs make the contact rows.
    assert.ok((await Promise.all([send('alice', 'bob'), send('carol', 'bob')])).every((r) => 'status' in r && r.status === 'queued'));
    const notices = await explainEverything(store);
    const room = /\brooms r\b|room_members|room_key_ids/;
    const firstContact = /NOT EXISTS/;
    assert.ok(
      (await Promise.all([send('alice', 'bob'), send('bob', 'carol'), send('bob', 'alice')])).every((r) => 'status' in r && r.status === 'queued'),
    );
    let inner = innerStatements(notices);
    assert.ok(inner.length >= 4, `${inner.length} statements inside the functions:\n${notices.join('\n')}`);
    assert.deepEqual(
      inner.filter((m) => room.test(m) || firstContact.test(m)),
      [],
    );
    // alice and carol have never written to each other: their first DM looks for first contacts.
    notices.length = 0;
    assert.ok((await Promise.all([send('alice', 'bob'), send('alice', 'carol')])).every((r) => 'status' in r && r.status === 'queued'));
    inner = innerStatements(notices);
    assert.equal(inner.filter((m) => firstContact.test(m)).length, 1, notices.join('\n'));
    assert.deepEqual(
      inner.filter((m) => room.test(m)),
      [],
    );
  });

  test('a batch of sends that carry their sessions reads them inside send_facts, on a plan kept from one batch to the next', async () => {
    store = await PostgresStore.open(testPgUrl, { schema, max: 1 });
    for (const n of ['alice', 'bob']) {
      await store.registerAccount(account(n));
      await store.createSession({ id: `${n}-session`, nick: n, now: NOW });
      await store.addDevice(n, `${n[0]}-device-1`, NOW);
    }
    const send = (from: string, to: string) =>
      store.sendMessage({
        id: ulid(NOW),
        from,
        to: { dm: to },
        keyId: 'dm',
        iv: iv(),
        ct: ct(),
        senderDevice: `${from[0]}-device-1`,
        now: NOW,
        session: `${from}-session`,
      });
    const notices = await explainEverything(store);
    assert.ok((await Promise.all([send('alice', 'bob'), send('bob', 'alice')])).every((r) => 'status' in r && r.status === 'queued'));
    const readsSessions = notices.filter((m) => / on sessions\b/.test(m));
    // A statement of the script itself would be planned for the values written into it.
    assert.equal(readsSessions.length, 1, notices.join('\n'));
    assert.deepEqual(innerStatements(readsSessions), readsSessions);
    assert.ok(!/alice|bob/.test(readsSessions[0]!), `planned for its values:\n${readsSessions[0]}`);
  });

  test('a statement that can only scan a table is not compiled by JIT, although its cost carries the disabled-scan penalty', async () => {
    store = await PostgresStore.open(testPgUrl, { schema, max: 2 });
    const plan = (await store.pool.query('EXPLAIN (FORMAT JSON) SELECT COUNT(*) FROM devices WHERE push_endpoint IS NOT NULL')).rows[0][
      'QUERY PLAN'
    ][0];
    assert.ok(plan.Plan['Total Cost'] > 1e9, `cost ${plan.Plan['Total Cost']}`);
    assert.equal(plan.JIT, undefined, JSON.stringify(plan.JIT));
  });

  test("an operator's options in the URL are kept and win over the store's", async () => {
    const u = new URL(testPgUrl);
    u.searchParams.set('options', '-c enable_seqscan=on -c application_name=ops');
    store = await PostgresStore.open(u.toString(), { schema, max: 2 });
    const r = await store.pool.query<{ seq: string; path: string; app: string }>(
      "SELECT current_setting('enable_seqscan') AS seq, current_setting('search_path') AS path, current_setting('application_name') AS app",
    );
    assert.deepEqual(r.rows[0], { seq: 'on', path: schema, app: 'ops' });
  });

  test('the per-request lookup probes the sessions and devices indexes of small tables instead of scanning them', async () => {
    store = await PostgresStore.open(testPgUrl, { schema, max: 2 });
    for (let i = 0; i < 40; i++) {
      await store.registerAccount(account(`user${i}`));
      await store.createSession({ id: `session-${i}`, nick: `user${i}`, now: NOW });
      await store.addDevice(`user${i}`, `device-${i}`, NOW);
    }
    // This schema's two tables only (the search path names it): a bare ANALYZE reads every table of
    // the database and waits for the locks of other test files' migrations and drops, which once
    // held it past the store's 4 s query timeout in CI.
    await store.pool.query('ANALYZE sessions, devices');
    const lookup = await firstPrepared(() => Promise.all([store.getSession('session-3'), store.deviceOwner('device-3')]));
    const c = await store.pool.connect();
    try {
      // A generic plan is what a prepared statement settles on after its first executions.
      await c.query('SET plan_cache_mode = force_generic_plan');
      await c.query({ name: 'probe', text: lookup.text, values: lookup.values });
      const plan = (await c.query({ name: 'probe-plan', text: `EXPLAIN (FORMAT JSON) ${lookup.text}`, values: lookup.values })).rows[0][
        'QUERY PLAN'
      ][0].Plan;
      const kinds = nodes(plan);
      assert.ok(!kinds.includes('Seq Scan'), `plan: ${kinds.join(', ')}`);
      assert.ok(kinds.filter((k) => k === 'Index Scan').length >= 2, `plan: ${kinds.join(', ')}`);
    } finally {
      c.release();
    }
  });
});
