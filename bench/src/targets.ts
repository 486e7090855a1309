/**
 * The two servers a run compares: the service (accounts, devices and rooms made through its real
 * API) and the ceiling (told the same layout with one POST /setup). Workloads see only this
 * interface, so both get byte-for-byte the same load.
 */
import { restartChild, type Child } from './proc.js';
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
  /** The running process; replaced by restart(). */
  readonly child: Child;
  /** A fresh process on the same port and store (what the ceiling was told by /setup is lost). */
  restart(): Promise<void>;
  readonly api: Endpoint;
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

export class ServiceTarget implements Target {
  readonly name = 'service' as const;
  readonly api: Endpoint;

  constructor(public child: Child) {
    this.api = new Endpoint(child.port, SETUP_CONCURRENCY);
  }

  async restart(): Promise<void> {
    this.api.resize(SETUP_CONCURRENCY);
    this.child = await restartChild(this.child);
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

export class CeilingTarget implements Target {
  readonly name = 'ceiling' as const;
  readonly api: Endpoint;

  constructor(public child: Child) {
    this.api = new Endpoint(child.port, SETUP_CONCURRENCY);
  }

  async restart(): Promise<void> {
    this.api.resize(SETUP_CONCURRENCY);
    this.child = await restartChild(this.child);
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
