/**
 * Requests that never reach the router: bytes that are not HTTP (a body longer than its declared
 * Content-Length leaves the rest to be read as the next request), bad lengths, oversized headers,
 * and clients too slow to send their headers or body in time (slowloris). Node hands these to one
 * callback with the raw socket; the answer keeps the service's form, `{error, message}` with a
 * code of the catalog and the headers every response carries, and the connection is closed.
 */
import type { Socket } from 'node:net';
import { ApiError, type ErrorCode } from '@svc/protocol';
import { JSON_CONTENT_TYPE, SECURITY_HEADERS } from './headers.js';

/**
 * Oversized headers are `too_large`; everything else the client sent wrong or too slowly is
 * `bad_json`, the catalog's code for a request whose body cannot be read (there is no 408 code).
 */
function codeFor(err: { code?: unknown }): ErrorCode {
  return err.code === 'HPE_HEADER_OVERFLOW' ? 'too_large' : 'bad_json';
}

export function clientErrorHandler(err: Error & { code?: unknown }, socket: Socket): void {
  // A reset connection has nobody left to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  if (socket.writable) {
    const api = new ApiError(codeFor(err));
    const body = JSON.stringify(api.toBody());
    const headers: Record<string, string> = {
      ...SECURITY_HEADERS,
      'content-type': JSON_CONTENT_TYPE,
      'cache-control': 'no-store',
      'content-length': String(Buffer.byteLength(body)),
      connection: 'close',
    };
    const head = Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('');
    socket.end(`HTTP/1.1 ${api.status} ${api.status === 413 ? 'Content Too Large' : 'Bad Request'}\r\n${head}\r\n${body}`);
  }
  // Whatever happens to the write, the socket goes within a second.
  setTimeout(() => socket.destroy(), 1000).unref();
}
