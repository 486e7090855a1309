/**
 * ApiClient: one typed method for every route of the protocol's ROUTES table (API_METHODS below
 * names which, and a test checks the two agree). It adds the Origin header when asked (Node), the
 * X-Device header where the route wants one, corrects its clock from every response's Date
 * header, and turns every refusal into an SdkError that says what to do next.
 */
import {
  isErrorCode,
  makeUlid,
  type ConfigResponse,
  type Contact,
  type CreateRoomRequest,
  type Device,
  type Kdf,
  type LoginRequest,
  type LoginResponse,
  type MeResponse,
  type MembersRequest,
  type PasswordRequest,
  type PushSubscriptionInput,
  type RegisterRequest,
  type Room,
  type SendMessageRequest,
  type SendMessageResponse,
  type UserResponse,
} from '@svc/protocol';
import { randomBytes } from './bytes.js';
import { ServerClock } from './clock.js';
import type { FetchLike } from './cookies.js';
import { SdkError } from './errors.js';

export interface ApiOptions {
  /** Service address, e.g. "http://127.0.0.1:8080"; empty (the default) means same origin, for browsers. */
  baseUrl?: string;
  /** The fetch to use; from Node pass cookieFetch() so the session cookie is kept. */
  fetch?: FetchLike;
  /** Sent as the Origin header (needed from Node; browsers set it themselves). */
  origin?: string;
  /** The device id sent as X-Device where a route wants one (can be set later with setDevice). */
  device?: string;
  /** Local clock, ms (tests inject a wrong one). */
  clock?: () => number;
}

export interface RequestOptions {
  body?: unknown;
  /** X-Device value (only the routes that take one send it). */
  device?: string;
  signal?: AbortSignal;
}

/** Route ("METHOD /path/:param" as in ROUTES) → the ApiClient method that calls it. */
export const API_METHODS = {
  'GET /api/config': 'config',
  'GET /api/kdf': 'kdf',
  'POST /api/register': 'register',
  'POST /api/login': 'login',
  'GET /api/me': 'me',
  'DELETE /api/me': 'deleteMe',
  'POST /api/logout': 'logout',
  'POST /api/password': 'changePassword',
  'GET /api/users/:nick': 'user',
  'POST /api/devices': 'addDevice',
  'GET /api/devices': 'devices',
  'DELETE /api/devices/:id': 'deleteDevice',
  'PUT /api/devices/:id/push': 'setPush',
  'DELETE /api/devices/:id/push': 'deletePush',
  'GET /api/contacts': 'contacts',
  'POST /api/contacts': 'addContact',
  'DELETE /api/contacts/:nick': 'deleteContact',
  'GET /api/rooms': 'rooms',
  'POST /api/rooms': 'createRoom',
  'POST /api/rooms/:id/members': 'changeMembers',
  'POST /api/rooms/:id/leave': 'leaveRoom',
  'DELETE /api/rooms/:id': 'deleteRoom',
  'POST /api/messages': 'sendMessage',
  'POST /api/ack': 'ack',
  'GET /api/events': 'openEvents',
} as const satisfies Record<string, keyof ApiClient>;

const enc = encodeURIComponent;

export class ApiClient {
  readonly baseUrl: string;
  readonly clock: ServerClock;
  private readonly fetchFn: FetchLike;
  private readonly origin: string | undefined;
  private deviceId: string | undefined;

  constructor(opts: ApiOptions = {}) {
    this.baseUrl = (opts.baseUrl ?? '').replace(/\/+$/, '');
    this.fetchFn = opts.fetch ?? ((i, o) => globalThis.fetch(i, o));
    this.origin = opts.origin;
    this.deviceId = opts.device;
    this.clock = new ServerClock(opts.clock);
  }

  /** Server-corrected time (ms): use it for ULIDs and sentAt. */
  now(): number {
    return this.clock.now();
  }

  /** A new message id (ULID) stamped with server-corrected time. */
  newId(): string {
    return makeUlid(this.now(), randomBytes);
  }

  get device(): string | undefined {
    return this.deviceId;
  }

  setDevice(id: string | undefined): void {
    this.deviceId = id;
  }

  // ---- transport ----

  /** Sends one request; returns the Response when its status is 2xx, throws SdkError otherwise. */
  async raw(method: string, path: string, o: RequestOptions = {}): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.origin) headers.origin = this.origin;
    if (o.device !== undefined) headers['x-device'] = o.device;
    let body: string | undefined;
    if (o.body !== undefined) {
      body = JSON.stringify(o.body);
      headers['content-type'] = 'application/json';
    }
    const init: RequestInit = { method, headers, credentials: 'same-origin', cache: 'no-store' };
    if (body !== undefined) init.body = body;
    if (o.signal) init.signal = o.signal;
    const sentAt = this.clock.localNow();
    let res: Response;
    try {
      res = await this.fetchFn(this.baseUrl + path, init);
    } catch (cause) {
      if (o.signal?.aborted) throw cause;
      throw new SdkError('network', { cause });
    }
    this.clock.observe(res.headers.get('date'), sentAt, this.clock.localNow());
    if (res.ok) return res;
    throw await errorFrom(res);
  }

  private async json<T>(method: string, path: string, o: RequestOptions = {}): Promise<T> {
    const res = await this.raw(method, path, o);
    const text = await res.text();
    try {
      return JSON.parse(text) as T;
    } catch (cause) {
      throw new SdkError('bad_response', { status: res.status, cause });
    }
  }

  private async none(method: string, path: string, o: RequestOptions = {}): Promise<void> {
    const res = await this.raw(method, path, o);
    await res.body?.cancel().catch(() => undefined);
  }

  private needDevice(device?: string): string {
    const d = device ?? this.deviceId;
    if (d === undefined) throw new SdkError('not_ready', { message: 'This call needs a device: call setDevice() or ensureDevice() first.' });
    return d;
  }

  private optionalDevice(): { device?: string } {
    return this.deviceId !== undefined ? { device: this.deviceId } : {};
  }

  // ---- account and session ----

  config(): Promise<ConfigResponse> {
    return this.json('GET', '/api/config');
  }

  /** The KDF parameters the service publishes for a nick (a decoy for unknown nicks). Check them with checkKdf before use. */
  kdf(nick: string): Promise<Kdf> {
    return this.json('GET', `/api/kdf?nick=${enc(nick)}`);
  }

  /** Registers and logs in (the response sets the session cookie). */
  register(body: RegisterRequest): Promise<{ nick: string }> {
    return this.json('POST', '/api/register', { body });
  }

  login(body: LoginRequest): Promise<LoginResponse> {
    return this.json('POST', '/api/login', { body });
  }

  me(): Promise<MeResponse> {
    return this.json('GET', '/api/me');
  }

  /** Deletes the account for good (the nick is retired). */
  deleteMe(authKey: string): Promise<void> {
    return this.none('DELETE', '/api/me', { body: { authKey } });
  }

  /** Ends the session. A 401 means there was none to end, which is what the caller wanted. */
  async logout(): Promise<void> {
    try {
      await this.none('POST', '/api/logout');
    } catch (e) {
      if (!(e instanceof SdkError && e.code === 'unauthenticated')) throw e;
    }
  }

  /** Replaces the login material; every other session of the account ends. */
  changePassword(body: PasswordRequest): Promise<void> {
    return this.none('POST', '/api/password', { body });
  }

  user(nick: string): Promise<UserResponse> {
    return this.json('GET', `/api/users/${enc(nick)}`);
  }

  // ---- devices ----

  /** Registers a device id for this account; `created` is false when it already was one. */
  async addDevice(id: string): Promise<{ id: string; createdAt: number; created: boolean }> {
    const res = await this.raw('POST', '/api/devices', { body: { id } });
    const created = res.status === 201;
    const body = (await res.json()) as { id: string; createdAt: number };
    return { ...body, created };
  }

  devices(): Promise<Device[]> {
    return this.json('GET', '/api/devices');
  }

  deleteDevice(id: string): Promise<void> {
    return this.none('DELETE', `/api/devices/${enc(id)}`);
  }

  /** Stores a Web Push subscription for a device (this device by default; X-Device is this client's). */
  async setPush(subscription: PushSubscriptionInput, deviceId?: string): Promise<void> {
    const d = this.needDevice();
    return this.none('PUT', `/api/devices/${enc(deviceId ?? d)}/push`, { body: { subscription }, device: d });
  }

  async deletePush(deviceId?: string): Promise<void> {
    const d = this.needDevice();
    return this.none('DELETE', `/api/devices/${enc(deviceId ?? d)}/push`, { device: d });
  }

  // ---- contacts ----

  contacts(): Promise<Contact[]> {
    return this.json('GET', '/api/contacts');
  }

  addContact(nick: string): Promise<UserResponse> {
    return this.json('POST', '/api/contacts', { body: { nick } });
  }

  deleteContact(nick: string): Promise<void> {
    return this.none('DELETE', `/api/contacts/${enc(nick)}`);
  }

  // ---- rooms ----

  rooms(): Promise<Room[]> {
    return this.json('GET', '/api/rooms');
  }

  /** X-Device is sent when the client has a device, so this device gets the response and not also an event. */
  createRoom(body: CreateRoomRequest): Promise<Room> {
    return this.json('POST', '/api/rooms', { body, ...this.optionalDevice() });
  }

  changeMembers(roomId: string, body: MembersRequest): Promise<Room> {
    return this.json('POST', `/api/rooms/${enc(roomId)}/members`, { body });
  }

  leaveRoom(roomId: string): Promise<void> {
    return this.none('POST', `/api/rooms/${enc(roomId)}/leave`, this.optionalDevice());
  }

  deleteRoom(roomId: string): Promise<void> {
    return this.none('DELETE', `/api/rooms/${enc(roomId)}`);
  }

  // ---- messages and events ----

  async sendMessage(body: SendMessageRequest): Promise<SendMessageResponse> {
    return this.json('POST', '/api/messages', { body, device: this.needDevice() });
  }

  /** Acknowledges up to 500 envelope ids in one request. */
  async ack(ids: string[]): Promise<void> {
    return this.none('POST', '/api/ack', { body: { ids }, device: this.needDevice() });
  }

  /** Opens the raw event stream (a streaming Response); EventStream parses and drives it. */
  async openEvents(deviceId?: string, signal?: AbortSignal): Promise<Response> {
    const d = deviceId ?? this.needDevice();
    return this.raw('GET', `/api/events?device=${enc(d)}`, signal ? { signal } : {});
  }
}

/** Turns a non-2xx response into an SdkError, reading the service's {error, message, field?} body. */
export async function errorFrom(res: Response): Promise<SdkError> {
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    body = undefined;
  }
  const b = (typeof body === 'object' && body !== null ? body : {}) as { error?: unknown; message?: unknown; field?: unknown };
  const retry = Number(res.headers.get('retry-after'));
  const retryAfter = Number.isFinite(retry) && retry > 0 ? Math.max(1, Math.ceil(retry)) : res.status === 429 ? 1 : undefined;
  if (!isErrorCode(b.error)) return new SdkError('bad_response', { status: res.status, message: `Unexpected answer ${res.status} from the service.` });
  return new SdkError(b.error, {
    status: res.status,
    ...(typeof b.field === 'string' ? { field: b.field } : {}),
    ...(retryAfter !== undefined ? { retryAfter } : {}),
  });
}
