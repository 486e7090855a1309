/**
 * Requests that never reach the router: bytes that are not HTTP (a body longer than its declared
 * Content-Length leaves the rest to be read as the next request), bad lengths, oversized headers,
 * and clients too slow to send their headers or body in time (slowloris). Node hands these to one
 * callback with the raw socket; the answer keeps the service's form, `{error, message}` with a
 * code of the catalog and the headers every response carries, and the connection is closed.
 * Each such answer is logged (its cause code only). A connection on which nothing at all was sent
 * gets no answer when its header time runs out, only its closing (clientErrorHandler says why).
 *
 * Answers keep the order of the requests (RFC 9112 §9.3.2). Bytes that are not HTTP after a
 * request that was read whole (trailing garbage after a chunked body, the rest of a body longer
 * than its Content-Length) are a second, broken request: the first one still runs, so its own
 * answer must go out first. Writing the 400 at once would put it ahead of that answer, and the
 * client would read "400 bad_json" for a request whose handler then ran (a leave answered with an
 * error that still left the room). A request whose own body is still incomplete never reaches its
 * handler, so its error is answered at once. An event stream followed by such bytes keeps
 * streaming until it ends; the parser reads nothing more meanwhile, so nothing piles up.
 */
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { ServerResponse } from 'node:http';
import { ApiError, type ErrorCode } from '@svc/protocol';
import { JSON_CONTENT_TYPE, SECURITY_HEADERS } from './headers.js';

/**
 * Oversized headers are `too_large`; everything else the client sent wrong or too slowly is
 * `bad_json`, the catalog's code for a request whose body cannot be read (there is no 408 code).
 */
function codeFor(err: { code?: unknown }): ErrorCode {
  return err.code === 'HPE_HEADER_OVERFLOW' ? 'too_large' : 'bad_json';
}

/** Sockets whose error is answered or waiting for earlier answers: Node reports a dead parser again on every later read. */
const handled = new WeakSet<Socket>();

/** The response Node is writing on this socket now (pipelined ones queue behind it); Node keeps it on the socket. */
function inFlight(socket: Socket): ServerResponse | null {
  const res = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
  return res && !res.writableFinished ? res : null;
}

function answer(socket: Socket, code: ErrorCode): void {
  if (socket.writable) {
    const api = new ApiError(code);
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

/** Answers once every request read whole before the broken bytes has had its own answer. */
function answerInOrder(socket: Socket, code: ErrorCode): void {
  if (socket.destroyed) return;
  const res = inFlight(socket);
  const req = res?.req;
  if (!res || !req?.complete) {
    answer(socket, code);
    return;
  }
  // Node hands the socket to the next queued response when this one finishes; look again then.
  const next = (): void => {
    res.off('finish', next).off('close', next);
    setImmediate(() => answerInOrder(socket, code));
  };
  res.on('finish', next).on('close', next);
}

export function clientErrorHandler(this: FastifyInstance, err: Error & { code?: unknown }, socket: Socket): void {
  // A reset connection has nobody left to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  if (handled.has(socket)) return;
  handled.add(socket);
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT' && socket.bytesRead === 0) {
    // Nothing was ever sent on this connection: a browser's preconnect, opened ahead of the
    // requests it may carry. There is no request to answer, and an answer written now would be
    // read as the answer to whatever request the browser sends on it next (a valid GET came back
    // "400 bad_json" that way). Closing it is what a browser retries on another connection.
    socket.destroy();
    return;
  }
  const code = codeFor(err);
  // Node's own code only (a parse error, a request timeout): such an answer gets no request line,
  // and a valid request answered this way (a client's request read as too slow) is otherwise
  // invisible in the log.
  this.log.warn(
    { cause: typeof err.code === 'string' ? err.code : 'unknown', answer: code, pending: inFlight(socket) !== null },
    'client error answered',
  );
  answerInOrder(socket, code);
}
