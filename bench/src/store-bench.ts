/**
 * What the store-only benchmarks (`bench:store-send`, `bench:store-rooms`, `bench:store-lookup`)
 * share: the PostgreSQL store of a checkout (this one, or another given on the command line, to
 * compare two commits), opened on a fresh schema that is dropped afterwards, an account as those
 * loops register it, the loop of senders taking turns, and the CPU meter of the PostgreSQL and
 * Redis servers. `bench:store-fill`, on SQLite, takes the checkout, the account and the loop.
 */
import { randomBytes } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { withUser } from './backends.js';
import { StoreCpu } from './store-cpu.js';

const PG_URL = withUser(process.env.BENCH_DATABASE_URL || 'postgres://127.0.0.1:5432/test');
const REDIS_URL = process.env.BENCH_REDIS_URL || 'redis://127.0.0.1:6379';

/** The checkout named by a command-line argument, or this one. */
export function checkoutOf(arg: string | undefined): string {
  return resolve(arg ?? join(dirname(fileURLToPath(import.meta.url)), '..', '..'));
}

/**
 * Runs `fn` on the checkout's PostgresStore in a fresh schema, then closes the store and drops the
 * schema. `S` is the little of the store the loop uses (the server package is loaded at run time).
 */
export async function withBenchStore<S extends { close(): Promise<void> }>(checkout: string, fn: (store: S) => Promise<void>): Promise<void> {
  await openBenchStore<S>(checkout, 1, (stores) => fn(stores[0]!));
}

/** withBenchStore with `instances` stores on the one schema, as several service processes share a database. */
export async function openBenchStore<S extends { close(): Promise<void> }>(
  checkout: string,
  instances: number,
  fn: (stores: S[]) => Promise<void>,
): Promise<void> {
  const { PostgresStore } = (await import(join(checkout, 'packages/server/dist/src/store/postgres/index.js'))) as {
    PostgresStore: { open(url: string, o: { schema: string }): Promise<S> };
  };
  const schema = `bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  const stores: S[] = [];
  try {
    for (let i = 0; i < instances; i++) stores.push(await PostgresStore.open(PG_URL, { schema }));
    await fn(stores);
  } finally {
    for (const s of stores) await s.close();
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
  }
}

/** The CPU meter of the PostgreSQL and Redis servers the store uses. */
export function storeCpu(): Promise<StoreCpu> {
  return StoreCpu.find(PG_URL, REDIS_URL);
}

/** A new account as the store takes it (no HTTP: the fields only have to be stored). */
export function benchAccount(nick: string, sessionId: string, now: number): Record<string, unknown> {
  return {
    nick,
    authKeyHash: new Uint8Array(32),
    kdf: { alg: 'argon2id', m: 19456, t: 2, p: 1, salt: 'AAAAAAAAAAAAAAAAAAAAAA' },
    publicKey: 'pk',
    encryptedKey: { iv: 'iv', ct: 'ct' },
    invite: null,
    requireInvite: false,
    sessionId,
    now,
  };
}

/**
 * `senders` concurrent loops sharing `sends` sends, each loop sending its next only once its
 * last one has returned (as a client waits for its answer); `send(i)` sends one for loop `i`.
 */
export async function sendersInTurn(senders: number, sends: number, send: (i: number) => Promise<void>): Promise<void> {
  let started = 0;
  await Promise.all(
    Array.from({ length: senders }, async (_, i) => {
      while (started < sends) {
        started++;
        await send(i);
      }
    }),
  );
}
