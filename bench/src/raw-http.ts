/**
 * The load generator's hot path: HTTP/1.1 over plain `net` sockets, without `node:http`.
 *
 * A `node:http` request costs a ClientRequest, an IncomingMessage, header objects, agent
 * bookkeeping and the streams machinery, per message; on the benchmark's two cores that cost the
 * generator a whole core against the ceiling, so the ceiling measured the generator. Here a
 * request is one string written to a keep-alive socket (its head built once per sender), and the
 * answer goes through the byte-level parser of http-response-parser.ts; its body becomes a string
 * only when asked for.
 *
 * Loopback only: every socket goes to 127.0.0.1 (the harness's own child processes).
 */
import { connect, type Socket } from 'node:net';
import { READ_BUFFER, ResponseParser, type Head, type ParserEvents } from './http-response-parser.js';

const HOST = '127.0.0.1';
/** Node's default keep-alive timeout is 5 s; used when an answer does not say its own. */
const DEFAULT_KEEP_ALIVE_MS = 5_000;
/** A socket idle for nearly the server's keep-alive timeout is replaced rather than raced against the server's close. */
const KEEP_ALIVE_MARGIN_MS = 1_000;

export interface RawAnswer {
  status: number;
  /** The body as text, or '' when the request asked for it only on other statuses and got this one. */
  body: string;
}

type Done = (err: Error | null, a: RawAnswer | null) => void;

/**
 * One keep-alive connection with at most one request in flight. A connection closed by the
 * server (a `Connection: close` answer, its keep-alive timeout, an error) is opened afresh for
 * the next request; the request that was in flight fails.
 */
export class RawConn implements ParserEvents {
  private sock: Socket | null = null;
  private parser = new ResponseParser(this);
  private done: Done | null = null;
  private skipStatus = 0;
  private status = 0;
  private keepAlive = true;
  private chunks: Buffer[] | null = null;
  private idleSince = 0;
  private reuseMs = DEFAULT_KEEP_ALIVE_MS - KEEP_ALIVE_MARGIN_MS;

  constructor(
    readonly port: number,
    private readonly timeoutMs = 30_000,
  ) {}

  /**
   * Writes `request` (a whole HTTP/1.1 request) and calls `done` once with the answer or an error.
   * The body is kept as text unless the status is `skipBodyOn` (the expected one).
   */
  send(request: string, skipBodyOn: number, done: Done): void {
    if (this.done) return done(new Error('raw-http: a request is already in flight on this connection'), null);
    let s = this.sock;
    if (s && performance.now() - this.idleSince > this.reuseMs) {
      this.drop();
      s = null;
    }
    if (!s) s = this.open();
    this.done = done;
    this.skipStatus = skipBodyOn;
    s.write(request);
  }

  close(): void {
    this.drop();
    this.fail(new Error('raw-http: connection closed by the generator'));
  }

  private open(): Socket {
    const s: Socket = connect({
      host: HOST,
      port: this.port,
      onread: {
        buffer: READ_BUFFER,
        callback: (n: number, buf: Uint8Array) => {
          if (this.sock === s) this.data((buf as Buffer).subarray(0, n));
          return true;
        },
      },
    });
    s.setNoDelay(true);
    s.setTimeout(this.timeoutMs);
    s.on('timeout', () => {
      if (this.sock !== s) return;
      this.drop();
      this.fail(new Error(`no answer within ${this.timeoutMs} ms`));
    });
    s.on('error', (e) => {
      if (this.sock !== s) return;
      this.sock = null;
      this.fail(e);
    });
    s.on('close', () => {
      if (this.sock !== s) return;
      this.sock = null;
      try {
        this.parser.end();
      } catch {
        // a truncated body is reported just below
      }
      this.fail(new Error('connection closed before the answer was complete'));
    });
    this.sock = s;
    this.parser = new ResponseParser(this);
    return s;
  }

  private drop(): void {
    const s = this.sock;
    this.sock = null;
    s?.destroy();
  }

  private fail(e: Error): void {
    const done = this.done;
    if (!done) return;
    this.done = null;
    this.chunks = null;
    done(e, null);
  }

  private data(b: Buffer): void {
    try {
      this.parser.feed(b);
    } catch (e) {
      this.drop();
      this.fail(e as Error);
    }
  }

  head(h: Head): void {
    this.status = h.status;
    this.keepAlive = h.keepAlive;
    if (h.keepAliveMs !== null) this.reuseMs = h.keepAliveMs - Math.min(KEEP_ALIVE_MARGIN_MS, h.keepAliveMs / 2);
    this.chunks = h.status === this.skipStatus ? null : [];
  }

  body(buf: Buffer, start: number, end: number): void {
    // Copied: the socket's buffer is not ours after this call.
    if (this.chunks && end > start) this.chunks.push(Buffer.from(buf.subarray(start, end)));
  }

  complete(): void {
    const done = this.done;
    const body = this.chunks ? Buffer.concat(this.chunks).toString('utf8') : '';
    this.chunks = null;
    this.done = null;
    this.idleSince = performance.now();
    if (!this.keepAlive) this.drop();
    if (!done) {
      // An answer nobody asked for: the connection is out of step; start afresh.
      this.drop();
      return;
    }
    done(null, { status: this.status, body });
  }
}

interface Waiting {
  request: string;
  skipBodyOn: number;
  resolve: (a: RawAnswer) => void;
  reject: (e: Error) => void;
}

/**
 * Up to `max` keep-alive connections to one port, one request in flight on each. A request that
 * finds them all busy waits for the first to come free (in order), as with an agent's
 * `maxSockets`; the caller counts it as in flight meanwhile.
 */
export class RawPool {
  private readonly idle: RawConn[] = [];
  private readonly all: RawConn[] = [];
  private queue: Waiting[] = [];
  private queueHead = 0;
  private closed = false;

  constructor(
    readonly port: number,
    readonly max: number,
  ) {}

  /** One request; resolves with every status, rejects on a network or protocol error. */
  request(request: string, skipBodyOn = 0): Promise<RawAnswer> {
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(new Error('raw-http: pool closed'));
      let c = this.idle.pop();
      if (!c && this.all.length < this.max) {
        c = new RawConn(this.port);
        this.all.push(c);
      }
      if (c) this.run(c, { request, skipBodyOn, resolve, reject });
      else this.queue.push({ request, skipBodyOn, resolve, reject });
    });
  }

  private run(c: RawConn, w: Waiting): void {
    c.send(w.request, w.skipBodyOn, (err, a) => {
      if (err) w.reject(err);
      else w.resolve(a!);
      const next = this.next();
      if (next) this.run(c, next);
      else if (!this.closed) this.idle.push(c);
    });
  }

  private next(): Waiting | undefined {
    if (this.queueHead >= this.queue.length) return undefined;
    const w = this.queue[this.queueHead++];
    if (this.queueHead > 1024 && this.queueHead * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.queueHead);
      this.queueHead = 0;
    }
    return w;
  }

  close(): void {
    this.closed = true;
    const waiting = this.queue.slice(this.queueHead);
    this.queue = [];
    this.queueHead = 0;
    for (const c of this.all) c.close();
    this.all.length = 0;
    this.idle.length = 0;
    for (const w of waiting) w.reject(new Error('raw-http: pool closed'));
  }
}

/**
 * The fixed part of a request with a JSON body, built once per sender: the request line, Host,
 * Origin (the service requires it), the given headers, Content-Type, and `Content-Length: ` left
 * open for the body's length. Complete it with `withJson`.
 */
export function jsonRequestHead(port: number, method: string, path: string, headers: Record<string, string>): string {
  let head = `${method} ${path} HTTP/1.1\r\nHost: ${HOST}:${port}\r\nOrigin: http://${HOST}:${port}\r\n`;
  for (const [k, v] of Object.entries(headers)) {
    if (/[\r\n]/.test(k + v)) throw new Error(`raw-http: header ${k} has a line break`);
    head += `${k}: ${v}\r\n`;
  }
  return head + 'Content-Type: application/json\r\nContent-Length: ';
}

/** A whole request: a head from `jsonRequestHead` and its JSON body. */
export function withJson(head: string, json: string): string {
  return `${head}${Buffer.byteLength(json)}\r\n\r\n${json}`;
}
