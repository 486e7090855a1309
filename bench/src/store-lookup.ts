/**
 * `npm run bench:store-lookup`: the PostgreSQL store's per-request reads alone (a request's
 * session and its X-Device's owner, asked together as the session check asks them), so that what
 * PostgreSQL spends per request can be read apart from the rest. `concurrent` requests ask at the
 * same time in each round (1: the lightly loaded service, one request per event-loop round); the
 * run prints the rounds per second and the CPU per round of the PostgreSQL server (postmaster and
 * children, from /proc) and of this process.
 *
 *   npm run bench:store-lookup -- [rounds (5000)] [concurrent (1)] [checkout (this one)]
 */
import { benchAccount, checkoutOf, storeCpu, withBenchStore } from './store-bench.js';

/** The little of the store this loop uses (the server package is loaded at run time, from the checkout given). */
interface LookupStore {
  registerAccount(a: Record<string, unknown>): Promise<unknown>;
  addDevice(nick: string, id: string, now: number): Promise<unknown>;
  getSession(id: string): Promise<{ nick: string } | null>;
  deviceOwner(id: string): Promise<string | null>;
  close(): Promise<void>;
}

const ACCOUNTS = 500;
const [rounds = 5000, concurrent = 1] = process.argv.slice(2, 4).map(Number);

await withBenchStore<LookupStore>(checkoutOf(process.argv[4]), async (store) => {
  const now = Date.now();
  for (let i = 0; i < ACCOUNTS; i++) {
    await store.registerAccount(benchAccount(`u${i}`, `session-${i}`, now));
    await store.addDevice(`u${i}`, `device-${i}`, now);
  }
  const request = async (i: number) => {
    const k = i % ACCOUNTS;
    const [s, owner] = await Promise.all([store.getSession(`session-${k}`), store.deviceOwner(`device-${k}`)]);
    if (s?.nick !== `u${k}` || owner !== `u${k}`) throw new Error(`lookup ${k} answered ${JSON.stringify([s, owner])}`);
  };
  // Warm-up: every pooled connection has run the statements once.
  for (let i = 0; i < 200; i++) await Promise.all(Array.from({ length: concurrent }, (_, j) => request(i * concurrent + j)));

  const cpu = await storeCpu();
  const before = cpu.read().postgres;
  const self = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < rounds; i++) await Promise.all(Array.from({ length: concurrent }, (_, j) => request(i * concurrent + j)));
  const ms = performance.now() - t0;
  const pgMs = cpu.read().postgres - before;
  const own = process.cpuUsage(self);
  console.log(`${rounds} rounds of ${concurrent} requests in ${ms.toFixed(0)} ms: ${((rounds / ms) * 1000).toFixed(0)} rounds/s`);
  console.log(`PostgreSQL CPU per round: ${((pgMs * 1000) / rounds).toFixed(0)} µs (${cpu.describe()})`);
  console.log(`this process's CPU per round: ${((own.user + own.system) / rounds).toFixed(0)} µs`);
});
