/** What a route returns: a status from this small set, a body, and cookies. Route files hold no status literals. */
export interface RouteResult {
  status: 200 | 201 | 202 | 204;
  body?: unknown;
  setCookie?: string;
}

export const ok = (body: unknown, setCookie?: string): RouteResult => ({ status: 200, body, ...(setCookie ? { setCookie } : {}) });
export const created = (body: unknown, setCookie?: string): RouteResult => ({ status: 201, body, ...(setCookie ? { setCookie } : {}) });
export const accepted = (body: unknown): RouteResult => ({ status: 202, body });
export const noContent = (setCookie?: string): RouteResult => ({ status: 204, ...(setCookie ? { setCookie } : {}) });
/** 201 when something new was made, 200 when it already existed. */
export const createdOrOk = (isNew: boolean, body: unknown): RouteResult => (isNew ? created(body) : ok(body));
