/**
 * Durability for the group commit, off the event loop. The connection runs with
 * synchronous=NORMAL, so a COMMIT only writes its WAL frames to the operating system and returns
 * at once; before any write is answered, this fdatasyncs the WAL file on libuv's thread pool.
 * While that sync runs, the event loop goes on parsing requests and committing the next batch.
 *
 * Why this is as durable as synchronous=FULL: SQLite's recovery replays WAL frames up to the last
 * valid commit frame, and a commit's frames are in the WAL file before COMMIT returns, so once
 * the file is synced every transaction committed before the sync started survives a power loss.
 * An fsync acts on the file (the inode), not on the descriptor it is called through. The WAL file
 * is never deleted while the store holds its connection (SQLite deletes it only when the last
 * connection closes), and the checkpoints that let SQLite rewrite it from the start sync the WAL
 * and the database themselves under NORMAL, so frames overwritten later were already in the
 * database file.
 */
import { closeSync, fdatasync, fsyncSync, openSync } from 'node:fs';
import { dirname } from 'node:path';

export interface Durability {
  /** Makes every transaction committed so far durable; calls back once it is (or failed). */
  sync(done: (err: Error | null) => void): void;
  close(): void;
}

/** Syncs the `-wal` file of the database at `path`; `:memory:` needs nothing. */
export function walDurability(path: string): Durability {
  if (path === ':memory:' || path === '') return { sync: (done) => setImmediate(done, null), close() {} };
  // The WAL file exists from the first statement on (openDatabase ran the migrations). Its
  // directory entry is made durable once, here; the file then lives as long as the connection.
  const fd = openSync(`${path}-wal`, 'r');
  const dir = openSync(dirname(path), 'r');
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
  let open = true;
  return {
    sync(done) {
      fdatasync(fd, (err) => done(err));
    },
    close() {
      if (open) closeSync(fd);
      open = false;
    },
  };
}
