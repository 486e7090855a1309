/**
 * The route table of the API: what the server registers and the SDK calls. A test checks that
 * the server's registered routes equal this list.
 *
 * auth: needs a session. write: counts against the shared write limit (routes marked W).
 * device: 'required' | 'optional' | 'none' for the X-Device header.
 */
export interface RouteSpec {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  auth: boolean;
  write: boolean;
  device: 'required' | 'optional' | 'none';
}

const r = (
  method: RouteSpec['method'],
  path: string,
  auth: boolean,
  write: boolean,
  device: RouteSpec['device'] = 'none',
): RouteSpec => ({ method, path, auth, write, device });

export const ROUTES: readonly RouteSpec[] = [
  r('GET', '/api/config', false, false),
  r('GET', '/api/kdf', false, false),
  r('POST', '/api/register', false, false),
  r('POST', '/api/login', false, false),
  r('GET', '/api/me', true, false),
  r('DELETE', '/api/me', true, true),
  r('POST', '/api/logout', true, true),
  r('POST', '/api/password', true, true),
  r('GET', '/api/users/:nick', true, false),
  r('POST', '/api/devices', true, true),
  r('GET', '/api/devices', true, false),
  r('DELETE', '/api/devices/:id', true, true),
  r('PUT', '/api/devices/:id/push', true, true, 'required'),
  r('DELETE', '/api/devices/:id/push', true, true, 'required'),
  r('GET', '/api/contacts', true, false),
  r('POST', '/api/contacts', true, true),
  r('DELETE', '/api/contacts/:nick', true, true),
  r('GET', '/api/rooms', true, false),
  r('POST', '/api/rooms', true, true, 'optional'),
  r('POST', '/api/rooms/:id/members', true, true),
  r('POST', '/api/rooms/:id/leave', true, true, 'optional'),
  r('DELETE', '/api/rooms/:id', true, true),
  r('POST', '/api/messages', true, false, 'required'),
  r('POST', '/api/ack', true, true, 'required'),
  r('GET', '/api/events', true, false),
];
