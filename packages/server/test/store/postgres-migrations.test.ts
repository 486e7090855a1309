/** PostgreSQL migrations: applied once each and recorded; a database from a newer build is refused. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { PG_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { migrate, openPool } from '../../src/store/postgres/db.js';
import { NewerSchemaError } from '../../src/store/errors.js';
import { NewerSchemaError as SqliteNewerSchemaError } from '../../src/store/sqlite/db.js';
import { dropSchema, schemaName, sqlIn, testPgUrl } from '@svc/testkit/postgres';

const TABLES = [
  'accounts',
  'attachment_parts',
  'attachments',
  'contacts',
  'devices',
  'envelopes',
  'invites',
  'meta',
  'queue',
  'queue_lengths',
  'room_key_ids',
  'room_keys',
  'room_members',
  'rooms',
  'schema_migrations',
  'sessions',
];

async function inSchema(fn: (schema: string) => Promise<void>): Promise<void> {
  const schema = schemaName();
  try {
    await fn(schema);
  } finally {
    await dropSchema(schema);
  }
}

test('open creates a missing schema, runs every migration once and records its version', () =>
  inSchema(async (schema) => {
    await (await PostgresStore.open(testPgUrl, { schema })).close();
    await (await PostgresStore.open(testPgUrl, { schema })).close();
    const rows = await sqlIn<{ version: number }>(schema, 'SELECT version FROM schema_migrations ORDER BY version');
    assert.deepEqual(
      rows.map((r) => r.version),
      PG_MIGRATIONS.map((m) => m.version),
    );
    const tables = await sqlIn<{ table_name: string }>(
      schema,
      'SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name',
      [schema],
    );
    assert.deepEqual(
      tables.map((t) => t.table_name),
      TABLES,
    );
  }));

test('instances starting together on an empty database migrate it once', () =>
  inSchema(async (schema) => {
    const stores = await Promise.all([1, 2, 3].map(() => PostgresStore.open(testPgUrl, { schema })));
    const values = await Promise.all(stores.map((s, i) => s.getOrCreateMeta('server_secret', () => `candidate-${i}`)));
    assert.equal(new Set(values).size, 1, 'every instance shares the one stored secret');
    await Promise.all(stores.map((s) => s.close()));
    const rows = await sqlIn<{ n: number }>(schema, 'SELECT COUNT(*)::int AS n FROM schema_migrations');
    assert.equal(rows[0]!.n, PG_MIGRATIONS.length);
  }));

test('a later migration applies to a database holding data of the previous schema', () =>
  inSchema(async (schema) => {
    const store = await PostgresStore.open(testPgUrl, { schema });
    await store.getOrCreateMeta('x', () => 'kept');
    await store.close();
    const next = [...PG_MIGRATIONS, { version: 999, name: 'test column', sql: 'ALTER TABLE meta ADD COLUMN note TEXT' }];
    const pool = openPool(testPgUrl, { schema });
    try {
      await migrate(pool, schema, next);
    } finally {
      await pool.end();
    }
    assert.deepEqual(await sqlIn(schema, "SELECT value, note FROM meta WHERE key = 'x'"), [{ value: 'kept', note: null }]);
  }));

test('migration 10 adds the attachment store to a database holding data of version 9, which stays as it was', () =>
  inSchema(async (schema) => {
    const pool = openPool(testPgUrl, { schema });
    try {
      await migrate(
        pool,
        schema,
        PG_MIGRATIONS.filter((m) => m.version <= 9),
      );
      await pool.query("INSERT INTO meta (key, value) VALUES ('k', 'v')");
    } finally {
      await pool.end();
    }
    const store = await PostgresStore.open(testPgUrl, { schema });
    try {
      assert.equal(await store.getOrCreateMeta('k', () => 'other'), 'v');
      const part = { id: 'A'.repeat(22), nick: 'ann', n: 0, data: new Uint8Array([1, 2, 3]), now: 5, quotaBytes: 1_000_000 };
      assert.deepEqual(await store.putAttachmentPart(part), { ok: true });
      assert.deepEqual((await store.attachment(part.id))?.parts, [{ n: 0, bytes: 3 }]);
    } finally {
      await store.close();
    }
  }));

test('the later migrations bring a database at version 1 holding queued envelopes to the current send, count and ack', () =>
  inSchema(async (schema) => {
    const pool = openPool(testPgUrl, { schema });
    try {
      await migrate(
        pool,
        schema,
        PG_MIGRATIONS.filter((m) => m.version === 1),
      );
    } finally {
      await pool.end();
    }
    // What a version-1 build left: two accounts, their devices, one envelope queued for bob.
    await sqlIn(schema, "INSERT INTO accounts (nick, public_key, created_at) VALUES ('alice', 'pk', 1), ('bob', 'pk', 1)");
    await sqlIn(schema, "INSERT INTO devices (id, nick, created_at, queue_len) VALUES ('a-device-1', 'alice', 1, 0), ('b-device-1', 'bob', 1, 1)");
    await sqlIn(schema, "INSERT INTO envelopes (id, sender, ts, json) VALUES ('old', 'alice', 1, '{}')");
    await sqlIn(schema, "INSERT INTO queue (device_id, envelope_id, ts) VALUES ('b-device-1', 'old', 1)");
    await sqlIn(schema, "INSERT INTO contacts (nick, peer, created_at) VALUES ('alice', 'bob', 1), ('bob', 'alice', 1)");
    // Each function with its number of arguments: migration 9 added a second send_facts, 10 put_attachment_part, 12 its overload with a session.
    const fns = `SELECT p.proname || '/' || p.pronargs AS proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                  WHERE n.nspname = $1 ORDER BY p.proname, p.pronargs`;
    assert.deepEqual(await sqlIn(schema, fns, [schema]), []);

    const store = await PostgresStore.open(testPgUrl, { schema });
    try {
      assert.deepEqual(
        (await sqlIn<{ proname: string }>(schema, fns, [schema])).map((f) => f.proname),
        [
          'ack_envelopes/2',
          'device_connected/3',
          'put_attachment_part/6',
          'put_attachment_part/7',
          'queue_counted/3',
          'queue_trim/2',
          'send_facts/6',
          'send_facts/8',
          'send_write/9',
        ],
      );
      const rows = await sqlIn<{ version: number }>(schema, 'SELECT version FROM schema_migrations ORDER BY version');
      assert.deepEqual(
        rows.map((r) => r.version),
        PG_MIGRATIONS.map((m) => m.version),
      );
      // Migration 7: the lengths left the device rows for a table of their own, the non-zero ones copied.
      assert.deepEqual(
        await sqlIn(
          schema,
          "SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'devices' AND column_name = 'queue_len'",
          [schema],
        ),
        [],
      );
      assert.deepEqual(await sqlIn(schema, 'SELECT device_id, queue_len FROM queue_lengths ORDER BY device_id'), [
        { device_id: 'b-device-1', queue_len: 1 },
      ]);
      const now = Date.now();
      const id = '01' + 'J'.repeat(24);
      const r = await store.sendMessage({ id, from: 'alice', to: { dm: 'bob' }, keyId: 'dm', iv: 'iv', ct: 'ct', senderDevice: 'a-device-1', now });
      assert.ok('status' in r && r.status === 'queued');
      assert.deepEqual(r.targets, [{ deviceId: 'b-device-1', nick: 'bob', pushable: false }]);
      assert.deepEqual(
        (await store.readQueue('b-device-1', 0, 10)).map((e) => e.id),
        ['old', id],
        'the new entry queues after the old one',
      );
      await store.ack('b-device-1', ['old']);
      await store.flushQueueCounts();
      assert.deepEqual(await sqlIn(schema, "SELECT queue_len FROM queue_lengths WHERE device_id = 'b-device-1'"), [{ queue_len: 1 }]);
      assert.deepEqual(
        await store.sendMessage({ id, from: 'alice', to: { dm: 'bob' }, keyId: 'dm', iv: 'iv', ct: 'ct', senderDevice: 'a-device-1', now: now + 1 }),
        {
          status: 'retry',
          id,
          ts: now,
        },
      );
    } finally {
      await store.close();
    }
  }));

test('a failing migration leaves nothing behind and is not recorded', () =>
  inSchema(async (schema) => {
    await (await PostgresStore.open(testPgUrl, { schema })).close();
    const broken = [...PG_MIGRATIONS, { version: 998, name: 'broken', sql: 'CREATE TABLE half (x INT); SELECT no_such_column FROM meta' }];
    const pool = openPool(testPgUrl, { schema });
    try {
      await assert.rejects(migrate(pool, schema, broken));
    } finally {
      await pool.end();
    }
    assert.deepEqual(
      await sqlIn(schema, "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'half'", [schema]),
      [],
    );
    const rows = await sqlIn<{ v: number }>(schema, 'SELECT MAX(version) AS v FROM schema_migrations');
    assert.equal(rows[0]!.v, PG_MIGRATIONS.at(-1)!.version);
  }));

test('a database written by a newer build is refused with the same error as SQLite', () =>
  inSchema(async (schema) => {
    await (await PostgresStore.open(testPgUrl, { schema })).close();
    await sqlIn(schema, 'INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [10_000, 'future', Date.now()]);
    assert.equal(NewerSchemaError, SqliteNewerSchemaError, 'one error class for both backends');
    await assert.rejects(PostgresStore.open(testPgUrl, { schema }), (e: unknown) => e instanceof NewerSchemaError && /newer/.test(e.message));
  }));

test('times come back as numbers and binary as bytes', () =>
  inSchema(async (schema) => {
    const store = await PostgresStore.open(testPgUrl, { schema });
    try {
      const now = 1_800_000_000_123;
      const hash = new Uint8Array(32).map((_, i) => i * 7);
      const kdf = { alg: 'argon2id', salt: 'AAAAAAAAAAAAAAAAAAAAAA', m: 65536, t: 3, p: 1 } as const;
      await store.registerAccount({
        nick: 'alice',
        authKeyHash: hash,
        kdf,
        publicKey: 'pk',
        encryptedKey: { iv: 'iv', ct: 'ct' },
        invite: null,
        requireInvite: false,
        sessionId: 's1',
        now,
      });
      const a = (await store.getAccount('alice'))!;
      assert.equal(a.createdAt, now);
      assert.deepEqual([...a.authKeyHash], [...hash]);
      assert.deepEqual(await store.getSession('s1'), { id: 's1', nick: 'alice', createdAt: now, lastUsedAt: now });
      const types = await sqlIn<{ column_name: string; data_type: string }>(
        schema,
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'accounts' ORDER BY column_name",
        [schema],
      );
      assert.deepEqual(Object.fromEntries(types.map((t) => [t.column_name, t.data_type])), {
        auth_key_hash: 'bytea',
        created_at: 'bigint',
        deleted_at: 'bigint',
        encrypted_key: 'text',
        kdf: 'text',
        nick: 'text',
        public_key: 'text',
      });
    } finally {
      await store.close();
    }
  }));
