/**
 * ApiClient: one typed method for every route of the protocol's route table (API), named as the
 * route, with paths, query parameters and the X-Device header taken from the table. It adds the Origin header when asked (Node), the
 * X-Device header where the route wants one, corrects its clock from every response's Date
 * header, and turns every refusal into an SdkError that says what to do next.
 */
import {
  API,
  isErrorCode,
  makeUlid,
  routePath,
  type RouteName,
  type RouteSpec,
  type AddDeviceResponse,
  type AttachmentInfo,
  type FinishAttachmentRequest,
  type RegisterResponse,
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
  /** Asks for the body from this byte on (`Range: bytes=N-`). */
  from?: number;
  /** X-Device value (only the routes that take one send it). */
  device?: string;
  signal?: AbortSignal;
}

/**
 * One method per route of the protocol's table, named as the route: the compiler proves that every
 * route has its method here (ApiClient implements this).
 */
export type ApiMethods = { [N in RouteName]: (...args: never[]) => Promise<unknown> };

/** What a call of one route sends: path parameters, query parameters, body, and the device header. */
interface Call {
  params?: Record<string, string>;
  from?: number;
  query?: Record<string, string>;
  body?: unknown;
  /** X-Device for this call; otherwise the route's table entry decides (required: this client's, optional: when set). */
  device?: string;
  signal?: AbortSignal;
}

export class ApiClient implements ApiMethods {
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
    if (o.from !== undefined && o.from > 0) headers.range = `bytes=${o.from}-`;
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

  /** Sends one route's request (path, query and X-Device from the route table); throws SdkError on a refusal. */
  private send(spec: RouteSpec, c: Call = {}): Promise<Response> {
    let path = routePath(spec, c.params);
    if (c.query) path += '?' + new URLSearchParams(c.query).toString();
    const o: RequestOptions = {};
    if (c.body !== undefined) o.body = c.body;
    const device = c.device ?? (spec.device === 'required' ? this.needDevice() : spec.device === 'optional' ? this.deviceId : undefined);
    if (device !== undefined) o.device = device;
    if (c.signal) o.signal = c.signal;
    if (c.from !== undefined) o.from = c.from;
    return this.raw(spec.method, path, o);
  }

  /** A route answering JSON: its body, typed by the route table. */
  private async json<Res>(spec: RouteSpec<unknown, Res>, c: Call = {}): Promise<Res> {
    const res = await this.send(spec, c);
    const text = await res.text();
    try {
      return JSON.parse(text) as Res;
    } catch (cause) {
      throw new SdkError('bad_response', { status: res.status, cause });
    }
  }

  /** A route answering 204. */
  private async none(spec: RouteSpec, c: Call = {}): Promise<void> {
    const res = await this.send(spec, c);
    await res.body?.cancel().catch(() => undefined);
  }

  private needDevice(device?: string): string {
    const d = device ?? this.deviceId;
    if (d === undefined) throw new SdkError('not_ready', { message: 'This call needs a device: call setDevice() or ensureDevice() first.' });
    return d;
  }

  // ---- account and session ----

  config(): Promise<ConfigResponse> {
    return this.json(API.config);
  }

  /** The KDF parameters the service publishes for a nick (a decoy for unknown nicks). Check them with checkKdf before use. */
  kdf(nick: string): Promise<Kdf> {
    return this.json(API.kdf, { query: { nick } });
  }

  /** Registers and logs in (the response sets the session cookie). */
  register(body: RegisterRequest): Promise<RegisterResponse> {
    return this.json(API.register, { body });
  }

  login(body: LoginRequest): Promise<LoginResponse> {
    return this.json(API.login, { body });
  }

  me(): Promise<MeResponse> {
    return this.json(API.me);
  }

  /** Deletes the account for good (the nick is retired). */
  deleteMe(authKey: string): Promise<void> {
    return this.none(API.deleteMe, { body: { authKey } });
  }

  /** Ends the session. A 401 means there was none to end, which is what the caller wanted. */
  async logout(): Promise<void> {
    try {
      await this.none(API.logout);
    } catch (e) {
      if (!(e instanceof SdkError && e.code === 'unauthenticated')) throw e;
    }
  }

  /** Replaces the login material; every other session of the account ends. */
  changePassword(body: PasswordRequest): Promise<void> {
    return this.none(API.changePassword, { body });
  }

  user(nick: string): Promise<UserResponse> {
    return this.json(API.user, { params: { nick } });
  }

  // ---- devices ----

  /** Registers a device id for this account; `created` is false when it already was one. */
  async addDevice(id: string): Promise<AddDeviceResponse & { created: boolean }> {
    const res = await this.send(API.addDevice, { body: { id } });
    const created = res.status === 201;
    const body = (await res.json()) as AddDeviceResponse;
    return { ...body, created };
  }

  devices(): Promise<Device[]> {
    return this.json(API.devices);
  }

  deleteDevice(id: string): Promise<void> {
    return this.none(API.deleteDevice, { params: { id } });
  }

  /** Stores a Web Push subscription for a device (this device by default; X-Device is this client's). */
  async setPush(subscription: PushSubscriptionInput, deviceId?: string): Promise<void> {
    return this.none(API.setPush, { params: { id: deviceId ?? this.needDevice() }, body: { subscription } });
  }

  async deletePush(deviceId?: string): Promise<void> {
    return this.none(API.deletePush, { params: { id: deviceId ?? this.needDevice() } });
  }

  // ---- contacts ----

  contacts(): Promise<Contact[]> {
    return this.json(API.contacts);
  }

  addContact(nick: string): Promise<UserResponse> {
    return this.json(API.addContact, { body: { nick } });
  }

  deleteContact(nick: string): Promise<void> {
    return this.none(API.deleteContact, { params: { nick } });
  }

  // ---- rooms ----

  rooms(): Promise<Room[]> {
    return this.json(API.rooms);
  }

  /** X-Device is sent when the client has a device, so this device gets the response and not also an event. */
  createRoom(body: CreateRoomRequest): Promise<Room> {
    return this.json(API.createRoom, { body });
  }

  changeMembers(roomId: string, body: MembersRequest): Promise<Room> {
    return this.json(API.changeMembers, { params: { id: roomId }, body });
  }

  leaveRoom(roomId: string): Promise<void> {
    return this.none(API.leaveRoom, { params: { id: roomId } });
  }

  deleteRoom(roomId: string): Promise<void> {
    return this.none(API.deleteRoom, { params: { id: roomId } });
  }

  // ---- messages and events ----

  async sendMessage(body: SendMessageRequest): Promise<SendMessageResponse> {
    return this.json(API.sendMessage, { body });
  }

  /** Acknowledges up to 500 envelope ids in one request. */
  async ack(ids: string[]): Promise<void> {
    return this.none(API.ack, { body: { ids } });
  }

  /** Opens the raw event stream (a streaming Response); EventStream parses and drives it. */
  async openEvents(deviceId?: string, signal?: AbortSignal): Promise<Response> {
    return this.send(API.openEvents, { query: { device: deviceId ?? this.needDevice() }, ...(signal ? { signal } : {}) });
  }

  // ---- attachments ----

  /** Stores part `n` (base64url of at most the service's partBytes); sending it again replaces it. */
  uploadAttachmentPart(id: string, n: number, data: string, signal?: AbortSignal): Promise<void> {
    return this.none(API.uploadAttachmentPart, { params: { id, n: String(n) }, body: { data }, ...(signal ? { signal } : {}) });
  }

  /** Ends an upload; the service checks the parts against the stated count, size and SHA-256. */
  finishAttachment(id: string, body: FinishAttachmentRequest): Promise<AttachmentInfo> {
    return this.json(API.finishAttachment, { params: { id }, body });
  }

  /**
   * The ciphertext as a streaming Response, from byte `from` on when given: status 206 when the
   * service took the range, 200 when it sends the whole.
   */
  downloadAttachment(id: string, from?: number, signal?: AbortSignal): Promise<Response> {
    return this.send(API.downloadAttachment, { params: { id }, ...(from ? { from } : {}), ...(signal ? { signal } : {}) });
  }

  deleteAttachment(id: string): Promise<void> {
    return this.none(API.deleteAttachment, { params: { id } });
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
  if (!isErrorCode(b.error))
    return new SdkError('bad_response', { status: res.status, message: `Unexpected answer ${res.status} from the service.` });
  return new SdkError(b.error, {
    status: res.status,
    ...(typeof b.field === 'string' ? { field: b.field } : {}),
    ...(retryAfter !== undefined ? { retryAfter } : {}),
  });
}
