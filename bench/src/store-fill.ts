/**
 * `npm run bench:store-fill`: the embedded (SQLite) store's send path alone, without HTTP, as the
 * full benchmark's offline fill drives it: concurrent senders, each waiting for its send to be
 * durable before the next (the service's `lossMark()` / `durable()` barrier, with the store opened
 * `settleBeforeSync` as the service opens it), all to one device that has no stream. It prints the
 * wall time and this process's CPU per send, all threads (the WAL sync and the checkpointer run in
 * threads of their own), so that what a commit costs shows against the number of senders: with one
 * sender every send is a commit of its own (docs/BENCHMARKS.md).
 *
 *   npm run bench:store-fill -- [sends (5000)] [senders (10)] [checkout (this one)]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dmBody } from './fixtures.js';
import { benchAccount, checkoutOf, sendersInTurn } from './store-bench.js';

/** The little of the SQLite store this loop uses (loaded at run time, from the checkout given). */
interface FillStore {
  registerAccount(a: Record<string, unknown>): Promise<unknown>;
  addDevice(nick: string, id: string, now: number): Promise<unknown>;
  sendMessage(m: Record<string, unknown>, admit: () => Promise<void>): Promise<{ error?: string; status?: string }>;
  lossMark(): number;
  durable(mark: number): Promise<void>;
  close(): Promise<void>;
  /** The store's group commit, whose counters are kept for tests and benchmarks. */
  group?: { commits: number; writes: number };
}

const [sends = 5000, senders = 10] = process.argv.slice(2, 4).map(Number);
const { SqliteStore } = (await import(join(checkoutOf(process.argv[4]), 'packages/server/dist/src/store/sqlite/index.js'))) as {
  SqliteStore: { open(path: string, o: { settleBeforeSync: boolean }): FillStore };
};
const dir = mkdtempSync(join(tmpdir(), 'svc-store-fill-'));
const store = SqliteStore.open(join(dir, 'svc.db'), { settleBeforeSync: true });
try {
  const now = Date.now();
  await store.registerAccount(benchAccount('offline', 'session-offline', now));
  await store.addDevice('offline', 'offline-device', now);
  for (let i = 0; i < senders; i++) {
    await store.registerAccount(benchAccount(`s${i}`, `session-s${i}`, now));
    await store.addDevice(`s${i}`, `sender-${i}`, now);
  }
  const commits0 = store.group?.commits ?? 0;
  const self = process.cpuUsage();
  const t0 = performance.now();
  await sendersInTurn(senders, sends, async (i) => {
    const mark = store.lossMark();
    // A fresh id, and a ciphertext from the fixtures' pool (the loop pays for no randomness).
    const r = await store.sendMessage({ ...dmBody('offline'), from: `s${i}`, senderDevice: `sender-${i}`, now: Date.now() }, async () => undefined);
    if (r.status !== 'queued') throw new Error(`send refused: ${JSON.stringify(r)}`);
    await store.durable(mark);
  });
  const ms = performance.now() - t0;
  const own = process.cpuUsage(self);
  const commits = (store.group?.commits ?? NaN) - commits0;
  console.log(
    `${sends} sends by ${senders} senders, each durable before the next: ${ms.toFixed(0)} ms, ${commits} commits (${(sends / commits).toFixed(1)} sends a commit)`,
  );
  console.log(
    `CPU per send, all threads: ${((own.user + own.system) / sends).toFixed(0)} µs (user ${(own.user / sends).toFixed(0)}, system ${(own.system / sends).toFixed(0)})`,
  );
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
