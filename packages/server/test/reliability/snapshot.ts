/**
 * The whole stored state of a test server, as one comparable string: every row of every table,
 * in a fixed order. Tests take it before and after a refused request to prove it changed nothing.
 */
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import type { TestServer } from '@svc/testkit/harness';
import { PostgresStore } from '../../src/store/postgres/index.js';

/** Rows as sorted JSON lines; binary columns as hex (JSON.stringify would spell a Buffer as a byte array). */
const canon = (rows: unknown[]): string[] =>
  rows
    .map((r) =>
      JSON.stringify(
        Object.fromEntries(Object.entries(r as Record<string, unknown>).map(([k, v]) => [k, Buffer.isBuffer(v) ? `\\x${v.toString('hex')}` : v])),
      ),
    )
    .sort();

export class StateReader {
  private pgStatement: string | null = null;

  constructor(
    private readonly server: TestServer,
    private readonly kind: 'sqlite' | 'postgres',
  ) {}

  async read(): Promise<string> {
    // What the server has written but not yet committed is part of the state it answered from:
    // the embedded store settles a write before its commit (an event stream's open, for one,
    // answers without waiting for it), and a snapshot taken in between would see the commit land
    // in the next one.
    await Promise.all(this.server.apps.map((a) => a.deps.store.durable(a.deps.store.lossMark()).catch(() => undefined)));
    // Likewise the queue counts a PostgreSQL instance writes after its sends (queue-counts.ts):
    // one landing between two snapshots would look like a change made by the request between.
    await Promise.all(this.server.apps.map((a) => (a.deps.store instanceof PostgresStore ? a.deps.store.flushQueueCounts() : Promise.resolve())));
    if (this.kind === 'sqlite') {
      const db = new Database(this.server.dbPath, { readonly: true, fileMustExist: true });
      try {
        const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[];
        const out: Record<string, string[]> = {};
        for (const t of tables) out[t.name] = canon(db.prepare(`SELECT * FROM "${t.name}"`).all());
        return JSON.stringify(out);
      } finally {
        db.close();
      }
    }
    if (this.pgStatement === null) {
      const tables = (await this.server.query(
        "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1",
      )) as { name: string }[];
      // One statement for all tables: a snapshot is one round trip, and one consistent view.
      this.pgStatement = `SELECT ${tables.map((t) => `(SELECT coalesce(json_agg(x), '[]'::json) FROM "${t.name}" x) AS "${t.name}"`).join(', ')}`;
    }
    const [row] = await this.server.query(this.pgStatement);
    const out: Record<string, string[]> = {};
    for (const [k, v] of Object.entries(row ?? {})) out[k] = canon(v as unknown[]);
    return JSON.stringify(out);
  }

  /**
   * Reads the state again and fails unless it is `before`, naming the rows that differ (a whole
   * dump in the message would hide them), and returns what it read.
   */
  async assertUnchanged(before: string, message: string): Promise<string> {
    const now = await this.read();
    if (now !== before) assert.fail(`${message}\n${changedRows(before, now)}`);
    return now;
  }
}

/** The rows of each table that only one of two states holds, one per line. */
export function changedRows(before: string, after: string): string {
  const a = JSON.parse(before) as Record<string, string[]>;
  const b = JSON.parse(after) as Record<string, string[]>;
  const lines: string[] = [];
  for (const table of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
    const was = new Set(a[table] ?? []);
    const is = new Set(b[table] ?? []);
    for (const row of was) if (!is.has(row)) lines.push(`${table} - ${row}`);
    for (const row of is) if (!was.has(row)) lines.push(`${table} + ${row}`);
  }
  return lines.join('\n');
}
