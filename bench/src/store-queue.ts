/**
 * `npm run bench:store-queue`: the embedded (SQLite) store's queue, without HTTP, in two checkouts
 * side by side in one process, so that the machine's drift falls on both alike: rounds of DMs
 * (concurrent senders, each to its own recipient with two devices, each send durable before the
 * sender's next, as `bench:store-fill` sends), each round followed by the acks of all it queued
 * (each recipient device acking 100 ids a request), the two checkouts taking turns round by
 * round. It prints the medians of this process's CPU per DM, all threads, for the sends and for
 * their acks, and the bytes the queue's b-trees take per entry (SQLite's `dbstat`) after a last
 * round left unacked.
 *
 *   npm run bench:store-queue -- <checkout A> [checkout B (this one)] [senders (100)] [DMs a round (3000)] [rounds (12)]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dmBody } from './fixtures.js';
import { benchAccount, checkoutOf, sendersInTurn } from './store-bench.js';

/** The little of the SQLite store this loop uses (loaded at run time, from each checkout). */
interface QueueStore {
  registerAccount(a: Record<string, unknown>): Promise<unknown>;
  addDevice(nick: string, id: string, now: number): Promise<unknown>;
  sendMessage(m: Record<string, unknown>, admit: () => Promise<void>): Promise<{ status?: string }>;
  ack(deviceId: string, ids: string[]): Promise<void>;
  lossMark(): number;
  durable(mark: number): Promise<void>;
  close(): Promise<void>;
  db: { prepare(sql: string): { all(): unknown[] } };
}

interface Side {
  name: string;
  store: QueueStore;
  dir: string;
  sendUs: number[];
  ackUs: number[];
}

const [checkoutA, checkoutB] = [process.argv[2], process.argv[3]];
if (checkoutA === undefined) throw new Error('usage: npm run bench:store-queue -- <checkout A> [checkout B] [senders] [DMs a round] [rounds]');
const [senders = 100, perRound = 3000, rounds = 12] = process.argv.slice(4, 7).map(Number);
const ACK_BATCH = 100;

async function open(name: string, checkout: string): Promise<Side> {
  const { SqliteStore } = (await import(join(checkout, 'packages/server/dist/src/store/sqlite/index.js'))) as {
    SqliteStore: { open(path: string, o: { settleBeforeSync: boolean }): QueueStore };
  };
  const dir = mkdtempSync(join(tmpdir(), 'svc-store-queue-'));
  const store = SqliteStore.open(join(dir, 'svc.db'), { settleBeforeSync: true });
  const now = Date.now();
  for (let i = 0; i < senders; i++) {
    await store.registerAccount(benchAccount(`s${i}`, `session-s${i}`, now));
    await store.addDevice(`s${i}`, `sender-${i}`, now);
    await store.registerAccount(benchAccount(`r${i}`, `session-r${i}`, now));
    await store.addDevice(`r${i}`, `r${i}-device-1`, now);
    await store.addDevice(`r${i}`, `r${i}-device-2`, now);
  }
  return { name: `${name} (${checkout})`, store, dir, sendUs: [], ackUs: [] };
}

/** One round's sends; returns the ids each sender's recipient got. */
async function sendRound(side: Side): Promise<string[][]> {
  const s = side.store;
  const ids = Array.from({ length: senders }, (): string[] => []);
  const cpu = process.cpuUsage();
  await sendersInTurn(senders, perRound, async (i) => {
    const mark = s.lossMark();
    const body = dmBody(`r${i}`);
    const r = await s.sendMessage({ ...body, from: `s${i}`, senderDevice: `sender-${i}`, now: Date.now() }, async () => undefined);
    if (r.status !== 'queued') throw new Error(`send refused: ${JSON.stringify(r)}`);
    ids[i]!.push(body.id);
    await s.durable(mark);
  });
  const used = process.cpuUsage(cpu);
  side.sendUs.push((used.user + used.system) / perRound);
  return ids;
}

async function ackRound(side: Side, ids: string[][]): Promise<void> {
  const s = side.store;
  const cpu = process.cpuUsage();
  await Promise.all(
    ids.map(async (list, i) => {
      for (const device of [`r${i}-device-1`, `r${i}-device-2`]) {
        for (let k = 0; k < list.length; k += ACK_BATCH) {
          const mark = s.lossMark();
          await s.ack(device, list.slice(k, k + ACK_BATCH));
          await s.durable(mark);
        }
      }
    }),
  );
  const used = process.cpuUsage(cpu);
  side.ackUs.push((used.user + used.system) / perRound);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const sides = [await open('A', checkoutOf(checkoutA)), await open('B', checkoutOf(checkoutB))];
try {
  for (let r = 0; r < rounds; r++) {
    // Alternating which goes first, so that neither always follows the other's sync or collection.
    for (const side of r % 2 === 0 ? sides : [...sides].reverse()) await ackRound(side, await sendRound(side));
  }
  for (const side of sides) {
    await sendRound(side);
    const sizes = side.store.db
      .prepare(
        "SELECT d.name AS name, SUM(d.pgsize) AS bytes FROM dbstat d JOIN sqlite_schema s ON s.name = d.name WHERE s.tbl_name = 'queue' GROUP BY d.name",
      )
      .all() as { name: string; bytes: number }[];
    const bytes = sizes.reduce((n, x) => n + x.bytes, 0);
    console.log(side.name);
    console.log(
      `  CPU per DM, all threads (median of ${rounds} rounds of ${perRound}): sends ${median(side.sendUs).toFixed(1)} µs, their acks ${median(side.ackUs).toFixed(1)} µs`,
    );
    console.log(
      `  queue after ${perRound} DMs left unacked: ${sizes.map((x) => `${x.name} ${x.bytes} B`).join(', ')}; ${(bytes / (2 * perRound)).toFixed(1)} B an entry`,
    );
  }
} finally {
  for (const side of sides) {
    await side.store.close();
    rmSync(side.dir, { recursive: true, force: true });
  }
}
