/** What a route returns: a status from this small set, a body, and cookies. Route files hold no status literals. */
export interface RouteResult<T = unknown> {
  status: 200 | 201 | 202 | 204;
  body?: T;
  setCookie?: string;
}

export const ok = <T>(body: T, setCookie?: string): RouteResult<T> => ({ status: 200, body, ...(setCookie ? { setCookie } : {}) });
export const created = <T>(body: T, setCookie?: string): RouteResult<T> => ({ status: 201, body, ...(setCookie ? { setCookie } : {}) });
export const accepted = <T>(body: T): RouteResult<T> => ({ status: 202, body });
export const noContent = (setCookie?: string): RouteResult<never> => ({ status: 204, ...(setCookie ? { setCookie } : {}) });
/** 201 when something new was made, 200 when it already existed. */
export const createdOrOk = <T>(isNew: boolean, body: T): RouteResult<T> => (isNew ? created(body) : ok(body));
