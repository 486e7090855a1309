/**
 * Checkpoints off the event loop. SQLite's automatic checkpoint runs inside whichever COMMIT
 * pushes the WAL past 1,000 pages, on the main thread here, and with its two fsyncs and the
 * page copies it stalled the event loop for many milliseconds every few seconds under load:
 * p99 latency at 2,000 messages/s fell from 7–9 ms to about 5 ms in a quick benchmark without it.
 * So a worker thread with its own connection copies the WAL into the database regularly
 * (checkpoint-worker.ts), and the store's connection checkpoints only as a fallback, at a much
 * larger WAL.
 *
 * The limit of this: SQLite starts the WAL over only when a write transaction begins after a
 * checkpoint copied every frame, and under sustained writes the group commit begins the next
 * transaction right after each commit, before the worker catches up. The WAL then grows to the
 * fallback size and the main connection checkpoints: by then the worker has copied nearly all
 * frames, so the main thread copies only the last few and syncs, a short stall every ~40 MB of
 * WAL instead of a long one every 4 MB. When the writes pause, the WAL starts over by itself.
 */
import { Worker } from 'node:worker_threads';
import type { Db } from './db.js';

const INTERVAL_MS = 200;
/** The main connection's own checkpoint, if the worker falls behind or is gone: about 40 MB of WAL. */
const FALLBACK_PAGES = 10_000;

export class Checkpointer {
  private worker: Worker | null = null;

  constructor(db: Db) {
    if (db.memory) return;
    db.pragma(`wal_autocheckpoint = ${FALLBACK_PAGES}`);
    const w = new Worker(new URL('./checkpoint-worker.js', import.meta.url), { workerData: { path: db.name, intervalMs: INTERVAL_MS } });
    // A thread that cannot run leaves the fallback at the usual size: the store goes on as before.
    w.on('error', () => {
      if (db.open) db.pragma('wal_autocheckpoint = 1000');
      this.worker = null;
    });
    w.unref();
    this.worker = w;
  }

  /** Stops the thread and waits until its connection is closed. */
  async stop(): Promise<void> {
    const w = this.worker;
    if (!w) return;
    this.worker = null;
    const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
    // Held by the event loop again while it closes, so that the wait for it is not cut short.
    w.ref();
    w.postMessage('stop');
    await exited;
  }
}
