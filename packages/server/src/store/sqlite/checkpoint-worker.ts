/**
 * The checkpointer thread of the embedded store (see checkpointer.ts): its own connection to
 * the same file, copying WAL frames into the database every few hundred milliseconds. A PASSIVE
 * checkpoint never waits for and never blocks the writer on the main thread; with
 * synchronous=NORMAL it syncs the WAL before copying and the database after, here, off the
 * event loop.
 */
import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';

const { path, intervalMs } = workerData as { path: string; intervalMs: number };
const db = new Database(path);
db.pragma('synchronous = NORMAL');
// This connection never writes rows, so it never checkpoints on its own either.
db.pragma('wal_autocheckpoint = 0');

const timer = setInterval(() => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch (err) {
    // A busy or failing checkpoint is tried again next time; the main connection's own
    // checkpoint, at a much larger WAL, is the fallback.
    parentPort?.postMessage({ error: String(err) });
  }
}, intervalMs);

parentPort?.on('message', (m: unknown) => {
  if (m === 'stop') {
    clearInterval(timer);
    db.close();
    parentPort?.close();
  }
});
