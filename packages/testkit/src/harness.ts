/**
 * Test harness: a real server (createApp + listen on a loopback port) in the backend mode of the
 * test run (modes.ts: a fresh SQLite file in a fresh temporary folder, or a fresh PostgreSQL schema
 * and Redis key prefix for one or two instances), and small HTTP and event-stream clients that
 * talk to it over sockets.
 */
import { createECDH, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import assert from 'node:assert/strict';
import { encodeB64url, makeUlid, type Room } from '@svc/protocol';
import { createApp, type App, type AppOptions } from '@svc/server/app';
import { parseConfig } from '@svc/server/config';
import { defaultWebRoot } from '@svc/server/paths';
import Database from 'better-sqlite3';
import { startRoundRobin } from './round-robin.js';
import { openBackend, TEST_MODE, type TestMode } from './modes.js';
import { httpRequest, httpStream } from './http.js';
import { SseReader } from './sse.js';

export type { SseEvent } from './sse.js';

export const ORIGIN = 'http://svc.test';

export interface TestServer {
  /** Where clients connect: the instance, or the round-robin balancer in front of two. */
  url: string;
  /** The first instance (the only one outside the two-instance mode). */
  app: App;
  /** Every instance behind `url`. */
  apps: App[];
  /** Each instance's own address, for tests that choose the instance. */
  urls: string[];
  dir: string;
  /** The SQLite file (SQLite mode only). */
  dbPath: string;
  /** Every log line the instances wrote, parsed. */
  logs: Record<string, unknown>[];
  /** Runs one read-only SQL statement on the store of this run, SQLite or PostgreSQL. */
  query(text: string): Promise<Record<string, unknown>[]>;
  /** true when the device holds an open stream on any instance. */
  hasStream(deviceId: string): boolean;
  close(): Promise<void>;
}

/**
 * Writes one statement into the SQLite file of a running service, behind its clients' backs (what
 * an operator, or anyone holding the database, can do). Where the service runs in this process,
 * its group commit keeps its transaction open until the sync of the one before is reported on the
 * event loop, so a synchronous busy wait here (`busy_timeout`) would block the very loop the
 * service needs to commit and free the write lock: both would wait until the timeout and the
 * write would fail with SQLITE_BUSY. Instead a refused attempt is tried again after a few
 * milliseconds, with the event loop free in between, until `timeoutMs` has passed.
 */
export async function writeBehindService(dbPath: string, sql: string, params: unknown[] = [], timeoutMs = 10_000): Promise<void> {
  const db = new Database(dbPath, { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 0');
    const statement = db.prepare(sql);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        statement.run(...params);
        return;
      } catch (err) {
        const code = (err as { code?: unknown }).code;
        const busy = typeof code === 'string' && code.startsWith('SQLITE_BUSY');
        if (!busy || Date.now() > deadline) throw err;
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  } finally {
    db.close();
  }
}

/**
 * Rate limits are raised by default so that tests about other rules never meet them (every test
 * client comes from 127.0.0.1); tests about limits pass the values they need in `env`.
 */
export const TEST_RATES = {
  LIMIT_MESSAGES_PER_MIN: '100000',
  LIMIT_WRITES_PER_MIN: '100000',
  LIMIT_REGISTER_PER_HOUR: '100000',
  LIMIT_LOGIN_PER_10MIN: '100000',
  LIMIT_LOGIN_PER_IP_PER_10MIN: '100000',
  LIMIT_LOGIN_PER_NICK_PER_10MIN: '100000',
};

function logCollector(logs: Record<string, unknown>[]): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString().split('\n')) if (line.trim()) logs.push(JSON.parse(line) as Record<string, unknown>);
      cb();
    },
  });
}

/**
 * Starts the service in the backend mode of this test run (TEST_MODE, see modes.ts): one instance
 * on a fresh SQLite file, one on a fresh PostgreSQL schema with Redis, or two such instances behind
 * a round-robin balancer. `env` overrides configuration variables (README.md "Configuration").
 */
export async function startServer(env: Record<string, string> = {}, opts: AppOptions = {}, mode: TestMode = TEST_MODE): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-test-'));
  const dbPath = join(dir, 'svc.db');
  const backend = await openBackend(opts.store ? 'sqlite' : mode);
  const logs: Record<string, unknown>[] = [];
  const apps: App[] = [];
  for (let i = 0; i < backend.instances; i++) {
    const config = parseConfig(
      { PORT: '0', ORIGIN, DATABASE_URL: `sqlite:${dbPath}`, LOG_LEVEL: 'info', ...TEST_RATES, ...backend.env, ...env },
      { webRoot: defaultWebRoot(), build: { revision: 'test', commitTime: 1700000000000 } },
    );
    const store = opts.store ?? (await backend.store());
    const app = await createApp(config, { logStream: logCollector(logs), ...opts, ...(store ? { store } : {}) });
    await app.fastify.listen({ port: 0, host: '127.0.0.1' });
    apps.push(app);
  }
  const urls = apps.map((a) => {
    const addr = a.fastify.server.address();
    return `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  });
  const balancer = apps.length > 1 ? await startRoundRobin(urls) : null;
  return {
    url: balancer?.url ?? urls[0]!,
    app: apps[0]!,
    apps,
    urls,
    dir,
    dbPath,
    logs,
    async query(text) {
      if (backend.sql) return backend.sql(text);
      const db = new Database(dbPath, { readonly: true, fileMustExist: true });
      try {
        return db.prepare(text).all() as Record<string, unknown>[];
      } finally {
        db.close();
      }
    },
    hasStream: (deviceId) => apps.some((a) => a.streams.has(deviceId)),
    async close() {
      await balancer?.close();
      for (const a of apps) await a.close(20);
      await backend.destroy();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The same server seen through one instance only (two-instance mode): its clients talk to that instance. */
export function instance(server: TestServer, i: number): TestServer {
  const url = server.urls[i];
  if (url === undefined) throw new Error(`no instance ${i}`);
  return { ...server, url, app: server.apps[i]! };
}

/** The same session as `c`, sent to instance `i` of a two-instance server (the crossing is certain, not left to a balancer). */
export function via(server: TestServer, c: Client, i: number): Client {
  const other = new Client(instance(server, i));
  other.cookie = c.cookie;
  other.nick = c.nick;
  other.authKey = c.authKey;
  return other;
}

export interface Res {
  status: number;
  headers: Headers;
  text: string;
  bytes: Buffer;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
}

export interface ReqOptions {
  /** A value to send as JSON, or a string sent as is. */
  body?: unknown;
  headers?: Record<string, string>;
  /** Sets X-Device. */
  device?: string;
  /** Leave out the Origin header (sent by default). */
  noOrigin?: boolean;
}

/** An HTTP client with a cookie jar of one cookie: the session. */
export class Client {
  cookie: string | null = null;
  nick = '';
  authKey = '';
  constructor(readonly server: TestServer) {}

  async req(method: string, path: string, o: ReqOptions = {}): Promise<Res> {
    const headers: Record<string, string> = { ...(o.noOrigin ? {} : { origin: ORIGIN }) };
    if (this.cookie) headers.cookie = this.cookie;
    if (o.device !== undefined) headers['x-device'] = o.device;
    let body: string | undefined;
    if (o.body !== undefined) {
      body = typeof o.body === 'string' ? o.body : JSON.stringify(o.body);
      headers['content-type'] = 'application/json';
    }
    Object.assign(headers, o.headers ?? {});
    const r = await httpRequest(this.server.url + path, method, headers, body);
    const setCookie = r.headers.get('set-cookie');
    if (setCookie) {
      const m = /svc_session=([^;]*)/.exec(setCookie);
      if (m) this.cookie = m[1] ? `svc_session=${m[1]}` : null;
    }
    const text = r.text;
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: r.status, headers: r.headers, text, bytes: r.bytes, json };
  }

  get = (path: string, o?: ReqOptions) => this.req('GET', path, o);
  post = (path: string, body?: unknown, o: ReqOptions = {}) => this.req('POST', path, { ...o, ...(body !== undefined ? { body } : {}) });
  put = (path: string, body?: unknown, o: ReqOptions = {}) => this.req('PUT', path, { ...o, ...(body !== undefined ? { body } : {}) });
  del = (path: string, body?: unknown, o: ReqOptions = {}) => this.req('DELETE', path, { ...o, ...(body !== undefined ? { body } : {}) });
}

/** Asserts the error form of docs/API.md: the status, `{error, message}` and `field` exactly when given. */
export function assertError(r: Pick<Res, 'status' | 'text' | 'json'>, status: number, code: string, field?: string): void {
  assert.equal(r.status, status, `expected ${status} ${code}, got ${r.status} ${r.text}`);
  assert.equal(r.json?.error, code, r.text);
  assert.equal(typeof r.json.message, 'string');
  if (field === undefined) assert.deepEqual(Object.keys(r.json).sort(), ['error', 'message'], r.text);
  else {
    assert.deepEqual(Object.keys(r.json).sort(), ['error', 'field', 'message'], r.text);
    assert.equal(r.json.field, field);
  }
}

export const b64 = (n: number): string => encodeB64url(randomBytes(n));
export const id16 = (): string => b64(16);
export const iv = (): string => b64(12);
export const ct = (n = 32): string => b64(n);
export const ulid = (ms = Date.now()): string => makeUlid(ms, (n) => new Uint8Array(randomBytes(n)));
export const kdf = () => ({ alg: 'argon2id', salt: b64(16), m: 65536, t: 3, p: 1 });
export function publicKey(): string {
  const e = createECDH('prime256v1');
  e.generateKeys();
  return encodeB64url(e.getPublicKey());
}

let nickSeq = 0;
/** A fresh valid nick, unique within the test process. */
export function nick(prefix = 'u'): string {
  nickSeq++;
  return `${prefix}${process.pid % 1000}_${nickSeq}`.slice(0, 32);
}

export function registerBody(n: string, authKey = b64(32)) {
  return { nick: n, authKey, kdf: kdf(), publicKey: publicKey(), encryptedKey: { iv: iv(), ct: ct(48) } };
}

/** Registers a new account and returns its signed-in client. */
export async function signup(server: TestServer, n = nick()): Promise<Client> {
  const c = new Client(server);
  const body = registerBody(n);
  const r = await c.post('/api/register', body);
  if (r.status !== 201) throw new Error(`register failed: ${r.status} ${r.text}`);
  c.nick = n;
  c.authKey = body.authKey;
  return c;
}

let deviceSeq = 0;
export function deviceId(): string {
  deviceSeq++;
  return `dev-${process.pid}-${deviceSeq}-${b64(6)}`;
}

/** Registers a device for the client and returns its id. */
export async function addDevice(c: Client, id = deviceId()): Promise<string> {
  const r = await c.post('/api/devices', { id });
  if (r.status !== 201) throw new Error(`device failed: ${r.status} ${r.text}`);
  return id;
}

/** A signed-in account with `n` devices. */
export async function userWithDevices(server: TestServer, n = 1, name = nick()): Promise<{ c: Client; devices: string[] }> {
  const c = await signup(server, name);
  const devices: string[] = [];
  for (let i = 0; i < n; i++) devices.push(await addDevice(c));
  return { c, devices };
}

/** A wrapped room key for `to` (the wrapped key input of docs/API.md). */
export const wk = (to: string) => ({ to, iv: iv(), ct: ct() });

/** The caller's rooms, as GET /api/rooms answers them. */
export async function rooms(c: Client): Promise<Room[]> {
  const r = await c.get('/api/rooms');
  assert.equal(r.status, 200, r.text);
  assert.ok(Array.isArray(r.json));
  return r.json as Room[];
}

export function dmBody(to: string, id = ulid()) {
  return { id, to: { dm: to }, keyId: 'dm', iv: iv(), ct: ct() };
}

/** An open event stream of a client's device: the reader of sse.ts over GET /api/events. */
export class Stream extends SseReader {
  status = 0;
  headers: Headers | null = null;
  private stop: () => void = () => {};

  static async open(c: Client, device: string, extraHeaders: Record<string, string> = {}): Promise<Stream> {
    const s = new Stream();
    const headers: Record<string, string> = { ...(c.cookie ? { cookie: c.cookie } : {}), ...extraHeaders };
    const r = await httpStream(`${c.server.url}/api/events?device=${encodeURIComponent(device)}`, headers);
    s.status = r.status;
    s.headers = r.headers;
    s.stop = r.close;
    if (r.status !== 200) {
      s.ended = true;
      // The error body is read to its end, so that the connection is free again.
      try {
        for await (const _ of r.body);
      } catch {
        // reset: nothing more to read
      }
      return s;
    }
    void s.read(r.body);
    return s;
  }

  /** Waits for the `ready` event that ends the replay. */
  ready(timeoutMs = 3000): Promise<boolean> {
    return this.until((ev) => ev.some((e) => e.event === 'ready'), timeoutMs);
  }

  /** Waits for the stream to end (server closed it). */
  async closedByServer(timeoutMs = 3000): Promise<boolean> {
    return this.until(() => this.ended, timeoutMs).then(() => this.ended);
  }

  /** Lets events in flight arrive, for asserting that something did NOT come. */
  static settle(ms = 150): Promise<void> {
    return new Promise((r) => setTimeout(r, ms));
  }

  close(): void {
    this.stop();
  }
}
