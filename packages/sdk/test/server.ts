/**
 * Real-server helpers: the shared test harness (a real in-process server on a temp SQLite file,
 * @svc/testkit) and SDK accounts that talk to it over HTTP, each device with its own cookie jar.
 */
import {
  ApiClient,
  cookieFetch,
  EventStream,
  KDF_MIN,
  Messenger,
  type ConnectionState,
  type FetchLike,
  type MessengerOptions,
  type SessionState,
} from '../src/index.js';
import type { Envelope } from '@svc/protocol';
import { ORIGIN, type TestServer } from '@svc/testkit/harness';
import { hashWasmArgon2 } from './hash-wasm.js';

export { ORIGIN, startServer, type TestServer } from '@svc/testkit/harness';

let seq = 0;
export function nick(prefix = 's'): string {
  seq++;
  return `${prefix}${process.pid % 10000}_${seq}`;
}

export interface Device {
  m: Messenger;
  api: ApiClient;
  deviceId: string;
  /** Every request this device made, "METHOD path". */
  requests: string[];
  /** Its cookie jar: what a browser keeps across a page reload. */
  jar: FetchLike;
}

export type ClientOptions = { clock?: () => number; wrap?: (f: FetchLike) => FetchLike; jar?: FetchLike } & Partial<MessengerOptions>;

/**
 * A device's API client and the options of its Messenger. Argon2id runs on hash-wasm (fast)
 * unless `argon2` is given; the SDK's own default is checked by the vectors and by the tests that
 * pass `argon2: argon2Js`.
 */
function parts(server: TestServer, o: ClientOptions): { api: ApiClient; opts: MessengerOptions; requests: string[]; jar: FetchLike } {
  const requests: string[] = [];
  const jar = o.jar ?? cookieFetch();
  const counting: FetchLike = (url, init) => {
    requests.push(`${init?.method ?? 'GET'} ${new URL(url).pathname}`);
    return jar(url, init);
  };
  const api = new ApiClient({
    baseUrl: server.url,
    origin: ORIGIN,
    fetch: o.wrap ? o.wrap(counting) : counting,
    ...(o.clock ? { clock: o.clock } : {}),
  });
  const opts: MessengerOptions = {
    api,
    argon2: o.argon2 ?? hashWasmArgon2,
    // Test accounts use the cheapest parameters (KDF_MIN) to stay fast.
    kdfFloor: o.kdfFloor ?? KDF_MIN,
    ...(o.keyCheck ? { keyCheck: o.keyCheck } : {}),
    ...(o.onKeyError ? { onKeyError: o.onKeyError } : {}),
  };
  return { api, opts, requests, jar };
}

export function client(server: TestServer, o: ClientOptions = {}): Device {
  const { api, opts, requests, jar } = parts(server, o);
  return { m: new Messenger(opts), api, deviceId: '', requests, jar };
}

/**
 * The same device after a page reload: a new API client and Messenger resumed from `state`
 * (as it comes back from IndexedDB), with the cookie jar the device had.
 */
export async function reload(server: TestServer, d: Device, state: unknown, o: ClientOptions = {}): Promise<Device> {
  const { api, opts, requests, jar } = parts(server, { ...o, jar: d.jar });
  const m = await Messenger.resume(opts, state);
  return { m, api, deviceId: api.device ?? '', requests, jar };
}

/** `d` opened again, with the same cookie jar, from a saved state without its private key and the password (Messenger.unlock). */
export async function unlockAgain(server: TestServer, d: Device, state: Omit<SessionState, 'privateKey'>, password: string): Promise<Device> {
  const { api, opts, requests, jar } = parts(server, { jar: d.jar });
  const m = await Messenger.unlock(opts, state, password);
  return { m, api, deviceId: api.device ?? '', requests, jar };
}

/** Registers an account (minimum KDF cost) and its first device. */
export async function register(
  server: TestServer,
  name = nick(),
  password = 'pw-' + name,
  o: Parameters<typeof client>[1] = {},
): Promise<Device & { password: string }> {
  const d = client(server, o);
  await d.m.register({ nick: name, password, kdf: KDF_MIN });
  d.deviceId = `dev-${name}-1`;
  await d.m.ensureDevice(d.deviceId);
  return { ...d, password };
}

/** Another device of an existing account: a fresh session by password. */
export async function loginDevice(
  server: TestServer,
  name: string,
  password: string,
  deviceId: string,
  o: Parameters<typeof client>[1] = {},
): Promise<Device> {
  const d = client(server, o);
  await d.m.login({ nick: name, password });
  d.deviceId = deviceId;
  await d.m.ensureDevice(deviceId);
  return d;
}

/** An event stream that collects envelopes and states, with waits. */
export class Inbox {
  envelopes: Envelope[] = [];
  states: ConnectionState[] = [];
  readies = 0;
  stream: EventStream;
  private waiters: (() => void)[] = [];

  constructor(d: Device, o: { failIds?: Set<string>; ackDelayMs?: number } = {}) {
    this.stream = d.m.events({
      onMsg: async (env) => {
        if (o.failIds?.has(env.id)) throw new Error('not stored');
        this.envelopes.push(env);
        this.wake();
      },
      onReady: () => {
        this.readies++;
        this.wake();
      },
      onState: (s) => {
        this.states.push(s);
        this.wake();
      },
      ...(o.ackDelayMs !== undefined ? { ackDelayMs: o.ackDelayMs } : {}),
      backoffMs: { initial: 50, max: 200 },
    });
  }

  start(): this {
    this.stream.start();
    return this;
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  async until(pred: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!pred()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; states ${this.states.join(',')}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 100));
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** Waits for the n-th `ready` (1 = the first connection's replay is done). */
  ready(n = 1): Promise<void> {
    return this.until(() => this.readies >= n && this.stream.state === 'live', `ready #${n}`);
  }

  count(n: number): Promise<void> {
    return this.until(() => this.envelopes.length >= n, `${n} envelopes (have ${this.envelopes.length})`);
  }

  close(): Promise<void> {
    return this.stream.close();
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
