/**
 * Copying a SQLite database into an empty PostgreSQL database (`admin copy-to-postgres`), so an
 * installation can move to several instances without losing accounts, rooms, queues or its
 * secrets. Every row is copied as stored, `seq` values included (join order, queue order; the
 * queue's are numbered in SQLite's key order), in one PostgreSQL transaction: the target ends
 * with all of it or none of it.
 */
import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { SQLITE_MIGRATIONS } from './sqlite/migrations.js';
import { PostgresStore } from './postgres/index.js';
import { transaction, type Sql } from './postgres/db.js';

/** A refusal the operator must act on; nothing was written. */
export class CopyRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CopyRefused';
  }
}

type PgType = 'text' | 'int8' | 'int4' | 'bool' | 'bytea';

interface TableSpec {
  name: string;
  /** Column, PostgreSQL type, and where SQLite no longer stores it, the SQL that computes it. */
  cols: [string, PgType, string?][];
  /** Source order, so rows keep their relative order even where nothing else records it. */
  order: string;
  /** What to read from, when not the table alone. */
  from?: string;
  /** Rows per insert when not BATCH (attachment parts are up to 24,000 bytes each). */
  batch?: number;
}

/** Every table of the schema (as PostgreSQL's migrations define it), parents before children. */
const TABLES: TableSpec[] = [
  {
    name: 'meta',
    cols: [
      ['key', 'text'],
      ['value', 'text'],
    ],
    order: 'key',
  },
  {
    name: 'accounts',
    cols: [
      ['nick', 'text'],
      ['auth_key_hash', 'bytea'],
      ['kdf', 'text'],
      ['public_key', 'text'],
      ['encrypted_key', 'text'],
      ['created_at', 'int8'],
      ['deleted_at', 'int8'],
    ],
    order: 'nick',
  },
  {
    name: 'invites',
    cols: [
      ['code', 'text'],
      ['uses_left', 'int4'],
      ['expires_at', 'int8'],
      ['created_at', 'int8'],
    ],
    order: 'code',
  },
  {
    name: 'sessions',
    cols: [
      ['id', 'text'],
      ['nick', 'text'],
      ['created_at', 'int8'],
      ['last_used_at', 'int8'],
    ],
    order: 'id',
  },
  {
    name: 'devices',
    cols: [
      ['seq', 'int8'],
      ['id', 'text'],
      ['nick', 'text'],
      ['created_at', 'int8'],
      ['last_seen_at', 'int8'],
      ['push_endpoint', 'text'],
      ['push_p256dh', 'text'],
      ['push_auth', 'text'],
      ['push_pending', 'bool'],
    ],
    order: 'seq',
  },
  {
    // SQLite keeps queue lengths in memory (its migrations 3 and 4); PostgreSQL in a table of
    // their own (its migration 7). The queue has no index by device, so they are counted in one pass.
    name: 'queue_lengths',
    cols: [
      ['device_id', 'text'],
      ['queue_len', 'int4'],
    ],
    order: 'device_id',
    from: '(SELECT device_id, COUNT(*) AS queue_len FROM queue GROUP BY device_id)',
  },
  {
    name: 'contacts',
    cols: [
      ['seq', 'int8'],
      ['nick', 'text'],
      ['peer', 'text'],
      ['created_at', 'int8'],
    ],
    order: 'seq',
  },
  {
    name: 'rooms',
    cols: [
      ['id', 'text'],
      ['name', 'text'],
      ['owner', 'text'],
      ['created_at', 'int8'],
      ['needs_rekey', 'bool'],
    ],
    order: 'id',
  },
  {
    name: 'room_members',
    cols: [
      ['seq', 'int8'],
      ['room_id', 'text'],
      ['nick', 'text'],
    ],
    order: 'seq',
  },
  {
    name: 'room_key_ids',
    cols: [
      ['room_id', 'text'],
      ['key_id', 'text'],
    ],
    order: 'room_id, key_id',
  },
  {
    name: 'room_keys',
    cols: [
      ['seq', 'int8'],
      ['room_id', 'text'],
      ['member', 'text'],
      ['key_id', 'text'],
      ['from_nick', 'text'],
      ['iv', 'text'],
      ['ct', 'text'],
    ],
    order: 'seq',
  },
  {
    name: 'envelopes',
    cols: [
      ['id', 'text'],
      ['sender', 'text'],
      ['ts', 'int8'],
      ['json', 'text'],
    ],
    order: 'id',
  },
  {
    // SQLite keys an entry by its envelope's key and its device (its migration 6); PostgreSQL
    // numbers entries in queue order and names the envelope by id. A device's entries come in
    // key order in both.
    name: 'queue',
    cols: [
      ['seq', 'int8', 'ROW_NUMBER() OVER (ORDER BY q.envelope_key, q.device_id)'],
      ['device_id', 'text', 'q.device_id'],
      ['envelope_id', 'text', 'e.id'],
      ['ts', 'int8', 'e.ts'],
    ],
    order: 'seq',
    from: 'queue q JOIN envelopes e ON e.rowid = q.envelope_key',
  },
  {
    name: 'attachments',
    cols: [
      ['id', 'text'],
      ['uploader', 'text'],
      ['created_at', 'int8'],
      ['finished_at', 'int8'],
      ['size', 'int8'],
      ['sha256', 'bytea'],
      ['bytes', 'int8'],
      ['version', 'int8'],
    ],
    order: 'id',
  },
  {
    name: 'attachment_parts',
    cols: [
      ['attachment_id', 'text'],
      ['n', 'int4'],
      ['data', 'bytea'],
    ],
    order: 'attachment_id, n',
    // About 1 MB an insert.
    batch: 40,
  },
];

const BATCH = 1000;

/** The SQLite file, read-only, after checking it has exactly the schema this build knows. */
function openSource(path: string): Database.Database {
  if (!existsSync(path)) throw new CopyRefused(`no SQLite database at ${path}`);
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const hasTable = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get();
    const found = hasTable ? ((db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number | null }).v ?? 0) : 0;
    const known = SQLITE_MIGRATIONS.reduce((m, x) => Math.max(m, x.version), 0);
    if (found !== known) {
      throw new CopyRefused(
        `the SQLite database has schema version ${found}, this build copies version ${known}; ` +
          (found < known ? 'start this build once on it to migrate it, then copy' : 'use the newer build that wrote it'),
      );
    }
    return db;
  } catch (e) {
    db.close();
    throw e;
  }
}

async function copyTable(src: Database.Database, q: Sql, t: TableSpec): Promise<number> {
  const names = t.cols.map(([c]) => c);
  const insert = `INSERT INTO ${t.name} (${names.join(', ')}) SELECT * FROM unnest(${t.cols.map(([, ty], i) => `$${i + 1}::${ty}[]`).join(', ')})`;
  const flush = async (rows: Record<string, unknown>[]) => {
    const arrays = t.cols.map(([c, ty]) => rows.map((r) => (ty === 'bool' ? r[c] === 1 : r[c])));
    await q.run(insert, arrays);
  };
  let batch: Record<string, unknown>[] = [];
  let n = 0;
  const select = t.cols.map(([c, , from]) => (from ? `${from} AS ${c}` : c)).join(', ');
  for (const row of src.prepare(`SELECT ${select} FROM ${t.from ?? t.name} ORDER BY ${t.order}`).iterate() as Iterable<Record<string, unknown>>) {
    batch.push(row);
    n++;
    if (batch.length === (t.batch ?? BATCH)) {
      await flush(batch);
      batch = [];
    }
  }
  if (batch.length > 0) await flush(batch);
  // Copied seq values were chosen by SQLite: new rows must number after them.
  if (names.includes('seq')) {
    await q.run(`SELECT setval(pg_get_serial_sequence('${t.name}', 'seq'), COALESCE((SELECT MAX(seq) FROM ${t.name}), 0) + 1, false)`);
  }
  return n;
}

/**
 * Copies the SQLite database at `sqlitePath` into the PostgreSQL database at `pgUrl` (in
 * `opts.schema` when given), after running the PostgreSQL migrations. Refuses (CopyRefused) a
 * target holding any row in any table, and a source of another schema version.
 * Returns the number of rows copied per table.
 */
export async function copyToPostgres(sqlitePath: string, pgUrl: string, opts: { schema?: string } = {}): Promise<Record<string, number>> {
  const src = openSource(sqlitePath);
  try {
    const store = await PostgresStore.open(pgUrl, opts.schema !== undefined ? { schema: opts.schema, max: 1 } : { max: 1 });
    try {
      // One read transaction on the source: a service still running on it cannot give us half a change.
      src.exec('BEGIN');
      try {
        return await transaction(store.pool, async (q) => {
          // Held to the commit: a second copy, or a service started on the target, waits and
          // then finds the target no longer empty.
          await q.run('LOCK TABLE meta, accounts IN SHARE ROW EXCLUSIVE MODE');
          // Any row in any table makes the target not empty: even an invite alone would collide.
          const used = await q.one<{ used: boolean }>(`SELECT ${TABLES.map((t) => `EXISTS (SELECT 1 FROM ${t.name})`).join(' OR ')} AS used`);
          if (used?.used) throw new CopyRefused('the PostgreSQL database is not empty; copy only into a new, empty database');
          const counts: Record<string, number> = {};
          for (const t of TABLES) counts[t.name] = await copyTable(src, q, t);
          return counts;
        });
      } finally {
        src.exec('COMMIT');
      }
    } finally {
      await store.close();
    }
  } finally {
    src.close();
  }
}
