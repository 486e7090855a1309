import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { autocommit, openPool } from '../../src/store/postgres/db.js';
import { dumpSchema } from '../../src/store/postgres/schema-dump.js';
import { dropSchema, schemaName, sqlIn, testPgUrl } from '@svc/testkit/postgres';

// The built test runs from packages/server/dist/test/store; the file lives beside the sources.
const SCHEMA_SQL = fileURLToPath(new URL('../../../src/store/postgres/schema.sql', import.meta.url));

async function dumped(): Promise<{ text: string; schema: string }> {
  const schema = schemaName();
  await (await PostgresStore.open(testPgUrl, { schema })).close();
  const pool = openPool(testPgUrl, { schema });
  try {
    return { text: await autocommit(pool, (q) => dumpSchema(q, schema)), schema };
  } finally {
    await pool.end();
  }
}

test('schema.sql is the schema the migrations make (run `npm run schema` after adding a migration)', async () => {
  const { text, schema } = await dumped();
  try {
    assert.equal(text, readFileSync(SCHEMA_SQL, 'utf8'), 'packages/server/src/store/postgres/schema.sql is out of date: run `npm run schema`');
  } finally {
    await dropSchema(schema);
  }
});

test('schema.sql names no schema and lists every table and function the migrations made', async () => {
  const { text, schema } = await dumped();
  try {
    assert.ok(!text.includes(schema), 'the scratch schema name is left out');
    const tables = await sqlIn<{ name: string }>(schema, 'SELECT tablename AS name FROM pg_tables WHERE schemaname = $1', [schema]);
    const functions = await sqlIn<{ name: string }>(
      schema,
      'SELECT DISTINCT p.proname AS name FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1',
      [schema],
    );
    assert.ok(tables.length >= 10 && functions.length >= 5, 'the migrations made tables and functions');
    for (const t of tables) assert.ok(text.includes(`CREATE TABLE ${t.name} (`), `table ${t.name} is in schema.sql`);
    for (const f of functions) assert.ok(text.includes(`FUNCTION ${f.name}(`), `function ${f.name} is in schema.sql`);
  } finally {
    await dropSchema(schema);
  }
});
