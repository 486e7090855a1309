/** Headers every response carries (docs/API.md). */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  // A page of another origin that opened the app (or that the app opened) gets no handle on its
  // window, so it can neither navigate it nor probe it across origins.
  'cross-origin-opener-policy': 'same-origin',
};

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

export const STREAM_HEADERS: Readonly<Record<string, string>> = {
  ...SECURITY_HEADERS,
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-store',
  'x-accel-buffering': 'no',
};
