/**
 * The two servers a run compares: the service (accounts, devices and rooms made through its real
 * API) and the ceiling (told the same layout with one POST /setup). Workloads see only this
 * interface, so both get byte-for-byte the same load. The service may run as several processes
 * on one PostgreSQL schema and Redis prefix (`--instances`); workloads then spread their senders
 * and event streams over them by instance number, and CPU time and memory are summed over them.
 */
import type { ChildService } from '@svc/testkit/child';
import { cpuTimes, ioCalls, rssBytes } from './procfs.js';
import type { StoreCpu } from './store-cpu.js';
import { Endpoint, expect, pool, sessionCookie } from './http.js';
import { id16, registerBody, wrappedKey } from './fixtures.js';

export interface Account {
  nick: string;
  /** `svc_session=…`, sent as the Cookie header. */
  cookie: string;
  devices: string[];
}

export interface Room {
  id: string;
  keyId: string;
  members: Account[];
}

export interface Target {
  readonly name: 'service' | 'ceiling';
  /** The running processes, in order: the service may run several on one store (`--instances`), the ceiling runs one. */
  readonly children: readonly ChildService[];
  /** One endpoint per process, in the same order; setup requests go to the first. */
  readonly apis: readonly Endpoint[];
  /** The first process's endpoint. */
  readonly api: Endpoint;
  /** CPU time of the service's PostgreSQL and Redis servers, or null (SQLite; the ceiling). */
  readonly storeCpu: StoreCpu | null;
  /** The port of instance `i` (counted round the processes), for event streams. */
  port(i: number): number;
  /** Sizes each endpoint's pools for the senders that send through it. */
  sizeFor(senders: readonly { instance: number }[]): void;
  /** User and system CPU time of all its processes so far, in ms. */
  cpu(): { user: number; system: number };
  /** Read- and write-type system calls of all its processes so far. */
  io(): { reads: number; writes: number };
  /** Resident memory of all its processes, in bytes. */
  rss(): number;
  /** Fresh processes on the same ports and store (what the ceiling was told by /setup is lost). */
  restart(): Promise<void>;
  /** Every process id it has had, restarts included (`--perf` removes their JIT maps). */
  readonly pids: ReadonlySet<number>;
  close(): void;
  /** Accounts `<tag>_<i>` with `devicesEach` devices each. */
  createAccounts(tag: string, n: number, devicesEach: number): Promise<Account[]>;
  /** A room whose owner is members[0] and whose members are all of `members`. */
  createRoom(members: Account[]): Promise<Room>;
}

const SETUP_CONCURRENCY = 16;

function layout(tag: string, n: number, devicesEach: number): { nick: string; devices: string[] }[] {
  return Array.from({ length: n }, (_, i) => ({
    nick: `${tag}_${i}`,
    devices: Array.from({ length: devicesEach }, (_, j) => `dev_${tag}_${i}_${j}`),
  }));
}

/** What both targets share: their processes, an endpoint each, and the sums over them. */
abstract class Processes {
  readonly apis: Endpoint[];
  readonly pids = new Set<number>();

  constructor(readonly children: readonly ChildService[]) {
    this.apis = children.map((c) => new Endpoint(c.port, SETUP_CONCURRENCY));
    for (const c of children) this.pids.add(c.pid);
  }

  get api(): Endpoint {
    return this.apis[0]!;
  }

  port(i: number): number {
    return this.children[i % this.children.length]!.port;
  }

  sizeFor(senders: readonly { instance: number }[]): void {
    const counts = this.apis.map(() => 0);
    for (const s of senders) counts[s.instance % counts.length]!++;
    this.apis.forEach((a, k) => a.resize(Math.max(1, counts[k]!)));
  }

  cpu(): { user: number; system: number } {
    return this.sum(cpuTimes);
  }

  io(): { reads: number; writes: number } {
    return this.sum(ioCalls);
  }

  /** What `read` says of each of its processes, field by field summed. */
  private sum<T extends Record<string, number>>(read: (pid: number) => T): T {
    const total = {} as Record<string, number>;
    for (const c of this.children) for (const [k, v] of Object.entries(read(c.pid))) total[k] = (total[k] ?? 0) + v;
    return total as T;
  }

  rss(): number {
    return this.children.reduce((sum, c) => sum + rssBytes(c.pid), 0);
  }

  async restart(): Promise<void> {
    for (let k = 0; k < this.children.length; k++) {
      this.apis[k]!.resize(SETUP_CONCURRENCY);
      await this.children[k]!.restart();
      this.pids.add(this.children[k]!.pid);
    }
  }

  close(): void {
    for (const a of this.apis) a.close();
  }
}

export class ServiceTarget extends Processes implements Target {
  readonly name = 'service' as const;

  constructor(
    children: ChildService[],
    readonly storeCpu: StoreCpu | null,
  ) {
    super(children);
  }

  async createAccounts(tag: string, n: number, devicesEach: number): Promise<Account[]> {
    const out: Account[] = [];
    await pool(layout(tag, n, devicesEach), SETUP_CONCURRENCY, async (a, i) => {
      const r = expect(await this.api.call('POST', '/api/register', { body: registerBody(a.nick) }), 'register', 201);
      const cookie = sessionCookie(r);
      for (const id of a.devices) expect(await this.api.call('POST', '/api/devices', { body: { id }, cookie }), 'add device', 201);
      out[i] = { nick: a.nick, cookie, devices: a.devices };
    });
    return out;
  }

  async createRoom(members: Account[]): Promise<Room> {
    const owner = members[0]!;
    const id = id16();
    const first = id16();
    const opts = { cookie: owner.cookie, device: owner.devices[0]! };
    expect(
      await this.api.call('POST', '/api/rooms', { ...opts, body: { id, name: 'bench', keyId: first, keys: [wrappedKey(owner.nick)] } }),
      'create room',
      201,
    );
    const keyId = id16();
    const body = { add: members.slice(1).map((m) => m.nick), remove: [], keyId, keys: members.map((m) => wrappedKey(m.nick)) };
    expect(await this.api.call('POST', `/api/rooms/${id}/members`, { ...opts, body }), 'add members', 200);
    return { id, keyId, members };
  }
}

export class CeilingTarget extends Processes implements Target {
  readonly name = 'ceiling' as const;
  readonly storeCpu = null;

  constructor(child: ChildService) {
    super([child]);
  }

  async createAccounts(tag: string, n: number, devicesEach: number): Promise<Account[]> {
    const accounts = layout(tag, n, devicesEach).map((a) => ({ ...a, cookie: `svc_session=${a.nick}` }));
    const devices = Object.fromEntries(accounts.map((a) => [a.nick, a.devices]));
    expect(await this.api.call('POST', '/setup', { body: { devices } }), 'ceiling setup', 204);
    return accounts;
  }

  async createRoom(members: Account[]): Promise<Room> {
    const id = id16();
    expect(await this.api.call('POST', '/setup', { body: { rooms: { [id]: members.map((m) => m.nick) } } }), 'ceiling room', 204);
    return { id, keyId: id16(), members };
  }
}
