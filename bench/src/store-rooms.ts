/**
 * `npm run bench:store-rooms`: the PostgreSQL store's room sends alone, without HTTP or Redis,
 * from one or several store instances at once, as several service processes share one database
 * (docs/BENCHMARKS.md). Rooms of 50 members with two devices each, as the rooms workload
 * of `npm run bench` makes them; each instance sends rounds of concurrent sends (one send batch
 * each, send-batch.ts) to the rooms in turn. Prints sends per second and the CPU per send of the
 * PostgreSQL server and of this process; give another checkout to compare two commits.
 *
 *   npm run bench:store-rooms -- [instances (2)] [sends per round (10)] [rounds per instance (100)] [checkout (this one)]
 */
import { randomBytes } from 'node:crypto';
import { ulid } from './fixtures.js';
import { benchAccount, checkoutOf, openBenchStore, storeCpu } from './store-bench.js';

/** The little of the store this loop uses (the server package is loaded at run time, from the checkout given). */
interface RoomStore {
  registerAccount(a: Record<string, unknown>): Promise<unknown>;
  addDevice(nick: string, id: string, now: number): Promise<unknown>;
  createRoom(r: Record<string, unknown>): Promise<unknown>;
  changeMembers(c: Record<string, unknown>): Promise<unknown>;
  sendMessage(m: Record<string, unknown>): Promise<{ error?: string; status?: string }>;
  close(): Promise<void>;
}

const ROOMS = 4;
const MEMBERS = 50;
const [instances = 2, perRound = 10, rounds = 100] = process.argv.slice(2, 5).map(Number);
const wrapped = (to: string) => ({ to, iv: 'aXZpdml2aXZpdml2', ct: randomBytes(60).toString('base64url') });
const keyId = () => randomBytes(12).toString('base64url');

await openBenchStore<RoomStore>(checkoutOf(process.argv[5]), instances, async (stores) => {
  const store = stores[0]!;
  const now = Date.now();
  const rooms: { id: string; keyId: string }[] = [];
  for (let r = 0; r < ROOMS; r++) {
    const nicks: string[] = [];
    for (let m = 0; m < MEMBERS; m++) {
      const nick = `m${r}x${m}`;
      nicks.push(nick);
      await store.registerAccount(benchAccount(nick, `session-${nick}`, now));
      await store.addDevice(nick, `${nick}-a`, now);
      await store.addDevice(nick, `${nick}-b`, now);
    }
    const id = keyId();
    await store.createRoom({ id, name: `room ${r}`, owner: nicks[0], keyId: keyId(), keys: [wrapped(nicks[0]!)], now });
    const k = keyId();
    await store.changeMembers({ roomId: id, caller: nicks[0], add: nicks.slice(1), remove: [], keyId: k, keys: nicks.map(wrapped), now });
    rooms.push({ id, keyId: k });
  }

  /** One round of an instance: `perRound` sends at once, to the rooms in turn, from ten senders per room. */
  const round = (s: RoomStore, n: number) =>
    Promise.all(
      Array.from({ length: perRound }, async (_, i) => {
        const r = (n + i) % ROOMS;
        const sender = `m${r}x${1 + (i % 10)}`;
        const res = await s.sendMessage({
          id: ulid(),
          to: { room: rooms[r]!.id },
          from: sender,
          keyId: rooms[r]!.keyId,
          iv: randomBytes(12).toString('base64url'),
          ct: randomBytes(272).toString('base64url'),
          senderDevice: `${sender}-a`,
          now: Date.now(),
        });
        if (res.status !== 'queued') throw new Error(`send refused: ${JSON.stringify(res)}`);
      }),
    );
  for (let n = 0; n < 10; n++) await round(store, n); // warm up

  const cpu = await storeCpu();
  const before = cpu.read().postgres;
  const self = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    stores.map(async (s) => {
      for (let n = 0; n < rounds; n++) await round(s, n);
    }),
  );
  const ms = performance.now() - t0;
  const pgMs = cpu.read().postgres - before;
  const own = process.cpuUsage(self);
  const sends = instances * perRound * rounds;
  console.log(
    `${sends} room sends (${ROOMS} rooms of ${MEMBERS} members, 2 devices each) by ${instances} instance(s), ${perRound} at a time each, in ${ms.toFixed(0)} ms: ${((sends / ms) * 1000).toFixed(0)} sends/s`,
  );
  console.log(`PostgreSQL CPU per send: ${((pgMs * 1000) / sends).toFixed(0)} µs (${cpu.describe()})`);
  console.log(`this process's CPU per send: ${((own.user + own.system) / sends).toFixed(0)} µs`);
});
