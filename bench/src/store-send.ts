/**
 * `npm run bench:store-send`: the PostgreSQL store's send path alone, without HTTP or Redis, so
 * that what PostgreSQL spends per send can be read apart from the rest (docs/POSTGRES.md).
 * Concurrent DM senders, each to its own recipient with two devices, call
 * `PostgresStore.sendMessage` as the service's requests do (each send carrying its session, as a
 * request of a session the instance remembers does); the run prints sends per second and the CPU
 * per send of the PostgreSQL server (postmaster and children, from /proc) and of this process.
 * Point BENCH_DATABASE_URL at a private cluster with pg_stat_statements to list the statements as
 * well.
 *
 *   npm run bench:store-send -- [sends (4000)] [senders (200)] [further devices in the table (3200)] [checkout (this one)]
 */
import { randomBytes } from 'node:crypto';
import { ulid } from './fixtures.js';
import { benchAccount, checkoutOf, sendersInTurn, storeCpu, withBenchStore } from './store-bench.js';

/** The little of the store this loop uses (the server package is loaded at run time, from the checkout given). */
interface SendStore {
  registerAccount(a: Record<string, unknown>): Promise<unknown>;
  addDevice(nick: string, id: string, now: number): Promise<unknown>;
  sendMessage(m: Record<string, unknown>): Promise<{ error?: string; status?: string }>;
  close(): Promise<void>;
}

const [sends = 4000, senders = 200, extra = 3200] = process.argv.slice(2, 5).map(Number);

await withBenchStore<SendStore>(checkoutOf(process.argv[5]), async (store) => {
  const now = Date.now();
  for (let i = 0; i < senders; i++) {
    await store.registerAccount(benchAccount(`s${i}`, `session-s${i}`, now));
    await store.registerAccount(benchAccount(`r${i}`, `session-r${i}`, now));
    await store.addDevice(`s${i}`, `sender-${i}`, now);
    await store.addDevice(`r${i}`, `recipient-${i}-a`, now);
    await store.addDevice(`r${i}`, `recipient-${i}-b`, now);
  }
  // Further devices, as the idle-stream workload leaves in the table before the DM workload.
  for (let i = 0; i < extra; i += 32) {
    await store.registerAccount(benchAccount(`x${i}`, `session-x${i}`, now));
    for (let k = 0; k < 32 && i + k < extra; k++) await store.addDevice(`x${i}`, `extra-${i}-${k}`, now);
  }

  const cpu = await storeCpu();
  const before = cpu.read().postgres;
  const self = process.cpuUsage();
  const t0 = performance.now();
  await sendersInTurn(senders, sends, async (i) => {
    const r = await store.sendMessage({
      id: ulid(),
      from: `s${i}`,
      to: { dm: `r${i}` },
      keyId: 'dm',
      iv: randomBytes(12).toString('base64url'),
      ct: randomBytes(272).toString('base64url'),
      senderDevice: `sender-${i}`,
      now: Date.now(),
      // As the service sends for a session it remembers: the send reads the session and the
      // sender's device with its facts (SendInput.session).
      session: `session-s${i}`,
    });
    if (r.status !== 'queued') throw new Error(`send refused: ${JSON.stringify(r)}`);
  });
  const ms = performance.now() - t0;
  const pgMs = cpu.read().postgres - before;
  const own = process.cpuUsage(self);
  console.log(`${sends} sends by ${senders} senders (${extra} further devices) in ${ms.toFixed(0)} ms: ${((sends / ms) * 1000).toFixed(0)} sends/s`);
  console.log(`PostgreSQL CPU per send: ${((pgMs * 1000) / sends).toFixed(0)} µs (${cpu.describe()})`);
  console.log(
    `this process's CPU per send: ${((own.user + own.system) / sends).toFixed(0)} µs (user ${(own.user / sends).toFixed(0)}, system ${(own.system / sends).toFixed(0)})`,
  );
});
