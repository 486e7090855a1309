/**
 * The API's one route table: for every route, its method and path, what it needs (session, the
 * X-Device header, query parameters), the limit it counts against, its request type with the check
 * of its body, its response type, and the error codes it may answer besides those every route may
 * (ROUTE_PIPELINE_ERRORS). The server registers its routes from this table and refuses to start
 * when a route lacks a handler; the SDK's ApiClient has one method per route, named as here, and
 * builds every path from it; a test checks that docs/API.md describes every route with each of its
 * error codes.
 */
import type { ErrorCode } from './errors.js';
import {
  checkAck,
  checkAttachmentPart,
  checkFinishAttachment,
  checkAddContact,
  checkAddDevice,
  checkCreateRoom,
  checkDeleteMe,
  checkLogin,
  checkMembers,
  checkPassword,
  checkRegister,
  checkSendMessage,
  checkSetPush,
  type AckRequest,
  type AddContactRequest,
  type AddDeviceRequest,
  type DeleteMeRequest,
  type SetPushRequest,
} from './requests.js';
import type {
  AttachmentInfo,
  AttachmentPartRequest,
  ConfigResponse,
  Contact,
  CreateRoomRequest,
  Device,
  FinishAttachmentRequest,
  Kdf,
  LoginRequest,
  LoginResponse,
  MeResponse,
  MembersRequest,
  PasswordRequest,
  RegisterRequest,
  Room,
  SendMessageRequest,
  SendMessageResponse,
  UserResponse,
} from './types.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/**
 * The rate limit a route counts against. `write` is the shared write limit of the routes marked W,
 * checked right after the session; the others are the route's own and are checked by the route at
 * its place in the order of checks (register and login before the body, messages at step 6, an
 * upload's bytes after its part's checks).
 */
export type LimitClass = 'write' | 'register' | 'login' | 'messages' | 'upload';

export interface RegisterResponse {
  nick: string;
}

export interface AddDeviceResponse {
  id: string;
  createdAt: number;
}

export interface RouteSpec<Req = unknown, Res = unknown> {
  method: Method;
  /** Fastify's spelling: `:name` for a path parameter. */
  path: string;
  /** Needs a session (every route but the public ones). */
  auth: boolean;
  /** Counts against the shared write limit (the routes marked W). */
  write: boolean;
  limit: LimitClass | null;
  /** The X-Device header: refused when missing (`required`), checked when present (`optional`), or not read. */
  device: 'required' | 'optional' | 'none';
  /** Query parameters the route reads. */
  query: readonly string[];
  /** The statuses of success. */
  success: readonly (200 | 201 | 202 | 204 | 206)[];
  /** Error codes of this route, besides ROUTE_PIPELINE_ERRORS and those of its session, limit and body. */
  errors: readonly ErrorCode[];
  /** A route of an optional part of the service, absent (404 `not_found`) when the operator turns it off. */
  feature: 'attachments' | null;
  /** The check of the parsed JSON body (routes with a body only). */
  body: ((b: Record<string, unknown>) => Req) | null;
  /** Carries the response type for the SDK's typing; never set. */
  readonly response?: Res;
}

/** Answered by any route: the origin check, a body over the size limit, an unexpected failure. */
export const ROUTE_PIPELINE_ERRORS: readonly ErrorCode[] = ['bad_origin', 'too_large', 'internal'];

type Spec<Req, Res> = Omit<RouteSpec<Req, Res>, 'write' | 'query' | 'body' | 'limit' | 'device' | 'feature'> &
  Partial<Pick<RouteSpec<Req, Res>, 'query' | 'body' | 'limit' | 'device' | 'feature'>>;

function route<Req = void, Res = void>(s: Spec<Req, Res>): RouteSpec<Req, Res> {
  const limit = s.limit ?? null;
  return {
    ...s,
    limit,
    write: limit === 'write',
    device: s.device ?? 'none',
    query: s.query ?? [],
    body: s.body ?? null,
    feature: s.feature ?? null,
  };
}

const session = { auth: true } as const;
const publicRoute = { auth: false } as const;
const W = { auth: true, limit: 'write' } as const;

export const API = {
  config: route<void, ConfigResponse>({ method: 'GET', path: '/api/config', ...publicRoute, success: [200], errors: [] }),
  kdf: route<void, Kdf>({ method: 'GET', path: '/api/kdf', ...publicRoute, query: ['nick'], success: [200], errors: ['invalid'] }),
  register: route<RegisterRequest, RegisterResponse>({
    method: 'POST',
    path: '/api/register',
    ...publicRoute,
    limit: 'register',
    body: checkRegister,
    success: [201],
    errors: ['invalid_nick', 'invalid', 'invite_required', 'invalid_invite', 'nick_taken'],
  }),
  login: route<LoginRequest, LoginResponse>({
    method: 'POST',
    path: '/api/login',
    ...publicRoute,
    limit: 'login',
    body: checkLogin,
    success: [200],
    errors: ['invalid', 'invalid_credentials'],
  }),
  me: route<void, MeResponse>({ method: 'GET', path: '/api/me', ...session, success: [200], errors: [] }),
  deleteMe: route<DeleteMeRequest>({
    method: 'DELETE',
    path: '/api/me',
    ...W,
    body: checkDeleteMe,
    success: [204],
    errors: ['invalid', 'invalid_credentials'],
  }),
  logout: route({ method: 'POST', path: '/api/logout', ...W, success: [204], errors: [] }),
  changePassword: route<PasswordRequest>({
    method: 'POST',
    path: '/api/password',
    ...W,
    body: checkPassword,
    success: [204],
    errors: ['invalid', 'invalid_credentials'],
  }),
  user: route<void, UserResponse>({ method: 'GET', path: '/api/users/:nick', ...session, success: [200], errors: ['invalid', 'unknown_user'] }),
  addDevice: route<AddDeviceRequest, AddDeviceResponse>({
    method: 'POST',
    path: '/api/devices',
    ...W,
    body: checkAddDevice,
    success: [201, 200],
    errors: ['invalid', 'device_conflict', 'limit_reached'],
  }),
  devices: route<void, Device[]>({ method: 'GET', path: '/api/devices', ...session, success: [200], errors: [] }),
  deleteDevice: route({ method: 'DELETE', path: '/api/devices/:id', ...W, success: [204], errors: ['unknown_device'] }),
  setPush: route<SetPushRequest>({
    method: 'PUT',
    path: '/api/devices/:id/push',
    ...W,
    device: 'required',
    body: checkSetPush,
    success: [204],
    errors: ['invalid', 'unknown_device'],
  }),
  deletePush: route({ method: 'DELETE', path: '/api/devices/:id/push', ...W, device: 'required', success: [204], errors: ['unknown_device'] }),
  contacts: route<void, Contact[]>({ method: 'GET', path: '/api/contacts', ...session, success: [200], errors: [] }),
  addContact: route<AddContactRequest, UserResponse>({
    method: 'POST',
    path: '/api/contacts',
    ...W,
    body: checkAddContact,
    success: [201, 200],
    errors: ['invalid', 'unknown_user', 'self', 'limit_reached'],
  }),
  deleteContact: route({ method: 'DELETE', path: '/api/contacts/:nick', ...W, success: [204], errors: ['invalid'] }),
  rooms: route<void, Room[]>({ method: 'GET', path: '/api/rooms', ...session, success: [200], errors: [] }),
  createRoom: route<CreateRoomRequest, Room>({
    method: 'POST',
    path: '/api/rooms',
    ...W,
    device: 'optional',
    body: checkCreateRoom,
    success: [201],
    errors: ['invalid', 'keys_mismatch', 'unknown_device', 'room_conflict', 'limit_reached'],
  }),
  changeMembers: route<MembersRequest, Room>({
    method: 'POST',
    path: '/api/rooms/:id/members',
    ...W,
    body: checkMembers,
    success: [200],
    errors: ['invalid', 'not_owner', 'unknown_user', 'owner', 'key_exists', 'keys_mismatch', 'limit_reached'],
  }),
  leaveRoom: route({ method: 'POST', path: '/api/rooms/:id/leave', ...W, device: 'optional', success: [204], errors: ['unknown_device'] }),
  deleteRoom: route({ method: 'DELETE', path: '/api/rooms/:id', ...W, success: [204], errors: ['not_owner'] }),
  sendMessage: route<SendMessageRequest, SendMessageResponse>({
    method: 'POST',
    path: '/api/messages',
    ...session,
    limit: 'messages',
    device: 'required',
    body: checkSendMessage,
    success: [202],
    errors: ['invalid', 'clock_skew', 'unknown_device', 'not_member', 'unknown_key', 'unknown_user', 'self', 'id_conflict'],
  }),
  ack: route<AckRequest>({
    method: 'POST',
    path: '/api/ack',
    ...W,
    device: 'required',
    body: checkAck,
    success: [204],
    errors: ['invalid', 'unknown_device'],
  }),
  openEvents: route({ method: 'GET', path: '/api/events', ...session, query: ['device'], success: [200], errors: ['invalid', 'unknown_device'] }),
  uploadAttachmentPart: route<AttachmentPartRequest>({
    method: 'PUT',
    path: '/api/attachments/:id/parts/:n',
    ...session,
    limit: 'upload',
    feature: 'attachments',
    body: checkAttachmentPart,
    success: [204],
    errors: ['invalid', 'attachment_conflict', 'attachment_finished', 'file_too_large', 'quota_exceeded'],
  }),
  finishAttachment: route<FinishAttachmentRequest, AttachmentInfo>({
    method: 'POST',
    path: '/api/attachments/:id/finish',
    ...W,
    feature: 'attachments',
    body: checkFinishAttachment,
    success: [201, 200],
    errors: ['invalid', 'unknown_attachment', 'attachment_conflict', 'attachment_finished', 'file_too_large', 'attachment_mismatch'],
  }),
  /** The whole ciphertext as application/octet-stream (206 for a `Range: bytes=N-` request). */
  downloadAttachment: route<void, Uint8Array>({
    method: 'GET',
    path: '/api/attachments/:id',
    ...session,
    feature: 'attachments',
    success: [200, 206],
    errors: ['invalid', 'unknown_attachment'],
  }),
  deleteAttachment: route({
    method: 'DELETE',
    path: '/api/attachments/:id',
    ...W,
    feature: 'attachments',
    success: [204],
    errors: ['invalid', 'unknown_attachment', 'not_uploader'],
  }),
} as const;

export type RouteName = keyof typeof API;
export type RequestOf<N extends RouteName> = (typeof API)[N] extends RouteSpec<infer Req, unknown> ? Req : never;
export type ResponseOf<N extends RouteName> = (typeof API)[N] extends RouteSpec<unknown, infer Res> ? Res : never;

export type NamedRoute = RouteSpec & { name: RouteName };

/** Every route with its name, in the table's order. */
export const ROUTES: readonly NamedRoute[] = (Object.keys(API) as RouteName[]).map((name) => ({ name, ...(API[name] as RouteSpec) }));

/** Every error code a route may answer: the pipeline's, its session's, its limit's, its body's and its own. */
export function routeErrors(spec: RouteSpec): ErrorCode[] {
  const all = new Set<ErrorCode>(ROUTE_PIPELINE_ERRORS);
  if (spec.auth) all.add('unauthenticated');
  if (spec.limit !== null) all.add('rate_limited');
  if (spec.body !== null) all.add('bad_json');
  for (const e of spec.errors) all.add(e);
  return [...all];
}

/** The path with its parameters filled in (each encoded as one path segment). */
export function routePath(spec: Pick<RouteSpec, 'path'>, params: Record<string, string> = {}): string {
  return spec.path.replace(/:([a-zA-Z]+)/g, (_, name: string) => {
    const v = params[name];
    if (v === undefined) throw new Error(`missing path parameter ${name} of ${spec.path}`);
    return encodeURIComponent(v);
  });
}
