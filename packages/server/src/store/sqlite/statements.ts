/** A cache of prepared statements, so each SQL text is compiled once per connection. */
import type Database from 'better-sqlite3';
import type { Db } from './db.js';

export class Statements {
  private readonly cache = new Map<string, Database.Statement>();
  constructor(private readonly db: Db) {}

  get(sql: string): Database.Statement {
    let s = this.cache.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.cache.set(sql, s);
    }
    return s;
  }

  all<T>(sql: string, ...params: unknown[]): T[] {
    return this.get(sql).all(...params) as T[];
  }

  one<T>(sql: string, ...params: unknown[]): T | undefined {
    return this.get(sql).get(...params) as T | undefined;
  }

  iterate<T>(sql: string, ...params: unknown[]): IterableIterator<T> {
    return this.get(sql).iterate(...params) as IterableIterator<T>;
  }

  run(sql: string, ...params: unknown[]): Database.RunResult {
    return this.get(sql).run(...params);
  }
}

/** `?, ?, ?` for an IN list of n values. */
export function placeholders(n: number): string {
  return new Array(n).fill('?').join(', ');
}
