/**
 * CPU time of the PostgreSQL and Redis servers behind the service (`--backend postgres`), read from
 * /proc before and after each measured phase, like the service's own. Both servers are shared with
 * whatever else runs on the machine, so a figure is the whole server's CPU during the phase, not
 * the service's share of it.
 *
 * PostgreSQL runs a process per connection. Its figure is the postmaster's and every child's
 * user + system time, plus the postmaster's cutime + cstime: the time of children that ended and
 * were waited for, so that a backend that closes during a phase still counts. Redis is one
 * process (its threads are in its times; a save's fork, once waited for, in its cutime).
 */
import { readdirSync } from 'node:fs';
import pg from 'pg';
import { Redis } from 'ioredis';
import { procStat, type ProcStat } from './procfs.js';

/** How a server's processes are told apart: its main PID and that PID's children, or (when that PID is not visible here) its process name. */
type Finder = { root: number } | { comm: string };

function statOf(pid: number): ProcStat | null {
  try {
    return procStat(pid);
  } catch {
    return null; // ended meanwhile, or not ours to read
  }
}

function matches(f: Finder, pid: number, s: ProcStat): boolean {
  return 'root' in f ? pid === f.root || s.ppid === f.root : s.comm === f.comm;
}

/** The postmaster: the parent of the backend that answers this connection. */
async function postmaster(url: string): Promise<number | null> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const r = await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const backend = statOf(r.rows[0]!.pid);
    return backend?.comm === 'postgres' && statOf(backend.ppid)?.comm === 'postgres' ? backend.ppid : null;
  } finally {
    await c.end();
  }
}

async function redisServer(url: string): Promise<number | null> {
  const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2 });
  await r.connect();
  try {
    const pid = Number(/^process_id:(\d+)/m.exec(await r.info('server'))?.[1]);
    return Number.isInteger(pid) && statOf(pid)?.comm === 'redis-server' ? pid : null;
  } finally {
    await r.quit();
  }
}

export class StoreCpu {
  private constructor(
    private readonly postgres: Finder,
    private readonly redis: Finder,
  ) {}

  static async find(pgUrl: string, redisUrl: string): Promise<StoreCpu> {
    const pm = await postmaster(pgUrl);
    const rs = await redisServer(redisUrl);
    return new StoreCpu(pm === null ? { comm: 'postgres' } : { root: pm }, rs === null ? { comm: 'redis-server' } : { root: rs });
  }

  /** Which processes are counted, for the run's log. */
  describe(): string {
    const what = (f: Finder, name: string) => ('root' in f ? `${name} PID ${f.root} and its children` : `every process named ${f.comm}`);
    return `${what(this.postgres, 'postmaster')}; ${what(this.redis, 'redis-server')}`;
  }

  /** CPU time of each server so far, in ms; NaN when no process of it is visible on this machine. */
  read(): { postgres: number; redis: number } {
    const sum = { postgres: 0, redis: 0 };
    const seen = { postgres: false, redis: false };
    for (const name of readdirSync('/proc')) {
      const pid = Number(name);
      if (!Number.isInteger(pid)) continue;
      const s = statOf(pid);
      if (!s) continue;
      for (const k of ['postgres', 'redis'] as const) {
        if (!matches(this[k], pid, s)) continue;
        sum[k] += s.user + s.system + s.children;
        seen[k] = true;
      }
    }
    return { postgres: seen.postgres ? sum.postgres : NaN, redis: seen.redis ? sum.redis : NaN };
  }
}
