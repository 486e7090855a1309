// Writes packages/server/src/store/postgres/schema.sql: the schema the PostgreSQL migrations make,
// read back from a scratch schema in DATABASE_URL (default: the test database on 127.0.0.1) that
// is dropped afterwards. Run through `npm run schema` (which builds first).
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { autocommit, migrate, openPool } from '../packages/server/dist/src/store/postgres/db.js';
import { dumpSchema } from '../packages/server/dist/src/store/postgres/schema-dump.js';

const url = process.env.DATABASE_URL || 'postgres://127.0.0.1:5432/test';
const schema = `schema_dump_${randomBytes(6).toString('hex')}`;
const target = fileURLToPath(new URL('../packages/server/src/store/postgres/schema.sql', import.meta.url));
const pool = openPool(url, { schema });
try {
  await migrate(pool, schema);
  writeFileSync(target, await autocommit(pool, (q) => dumpSchema(q, schema)));
  console.log(`wrote packages/server/src/store/postgres/schema.sql from ${schema}`);
} finally {
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.end();
}
