/**
 * The load generator's hot path: HTTP/1.1 over plain `net` sockets, without `node:http`.
 *
 * A `node:http` request costs a ClientRequest, an IncomingMessage, header objects, agent
 * bookkeeping and the streams machinery, per message; on the benchmark's two cores that cost the
 * generator a whole core against the ceiling, so the ceiling measured the generator. Here a
 * request is one string written to a keep-alive socket (its head built once per sender), and the
 * answer goes through a small byte-level parser that reads the status line and the few headers
 * that frame the body and say whether the connection stays open, and never builds a string of a
 * body unless asked to.
 *
 * Loopback only: every socket goes to 127.0.0.1 (the harness's own child processes).
 */
import { connect, type Socket } from 'node:net';

const HOST = '127.0.0.1';
const LF = 0x0a;
const CR = 0x0d;
/** A response head longer than this is not from one of our servers. */
const MAX_HEAD_BYTES = 64 * 1024;
/** Node's default keep-alive timeout is 5 s; used when an answer does not say its own. */
const DEFAULT_KEEP_ALIVE_MS = 5_000;
/** A socket idle for nearly the server's keep-alive timeout is replaced rather than raced against the server's close. */
const KEEP_ALIVE_MARGIN_MS = 1_000;

/**
 * One read buffer for every socket of the generator (`net` `onread`): reads are handled one at a
 * time and synchronously, and whatever is kept past a read is copied out, so no socket needs a
 * buffer of its own and no read allocates one.
 */
export const READ_BUFFER = Buffer.allocUnsafe(64 * 1024);

const enum St {
  Head,
  Length,
  ChunkSize,
  ChunkExt,
  ChunkData,
  ChunkDataEnd,
  Trailer,
  UntilClose,
  Done,
}

/** What the head of a response says about it. */
export interface Head {
  status: number;
  /** false when the server closes the connection after this response (or HTTP/1.0 without keep-alive). */
  keepAlive: boolean;
  /** The server's keep-alive timeout from `Keep-Alive: timeout=N`, in ms, or null. */
  keepAliveMs: number | null;
}

export interface ParserEvents {
  head(h: Head): void;
  /** A piece of the (de-chunked) body: bytes [start, end) of `buf`, valid only during the call. */
  body(buf: Buffer, start: number, end: number): void;
  /** The response ended (by its length, its last chunk, or the connection closing for an unframed body). */
  complete(): void;
}

function headerValue(lower: string, name: string): string | null {
  const at = lower.indexOf(`\r\n${name}:`);
  if (at < 0) return null;
  const from = at + name.length + 3;
  const to = lower.indexOf('\r\n', from);
  return lower.slice(from, to < 0 ? lower.length : to).trim();
}

/**
 * An incremental HTTP/1.1 response parser over the bytes of one connection. Feed it whatever the
 * socket gives: a response may come in several pieces, and several responses may come in one.
 * Throws on a malformed response; the connection is then unusable.
 */
export class ResponseParser {
  private st = St.Head;
  /** The start of a head that was split across reads. */
  private partial: Buffer | null = null;
  private remaining = 0;
  private chunkSize = 0;
  private chunkDigits = 0;
  private trailerLineLen = 0;
  /** The current response is the connection's last (`Connection: close`). */
  private closeAfter = false;

  constructor(private readonly on: ParserEvents) {}

  /** True while a response has begun and not ended (the connection closing now would cut it). */
  get midResponse(): boolean {
    return this.partial !== null || (this.st !== St.Head && this.st !== St.Done);
  }

  feed(chunk: Buffer): void {
    let b = chunk;
    let i = 0;
    let n = b.length;
    while (i < n) {
      switch (this.st) {
        case St.Head: {
          let from = i;
          if (this.partial) {
            from = Math.max(0, this.partial.length - 3);
            b = Buffer.concat([this.partial, i === 0 ? b : b.subarray(i)]);
            this.partial = null;
            i = 0;
            n = b.length;
          }
          const end = b.indexOf('\r\n\r\n', from, 'latin1');
          if (end < 0) {
            if (n - i > MAX_HEAD_BYTES) throw new Error('response head too long');
            this.partial = Buffer.from(b.subarray(i));
            return;
          }
          this.head(b, i, end);
          i = end + 4;
          break;
        }
        case St.Length:
        case St.ChunkData: {
          const take = Math.min(this.remaining, n - i);
          this.on.body(b, i, i + take);
          i += take;
          this.remaining -= take;
          if (this.remaining === 0) {
            if (this.st === St.Length) this.complete();
            else this.st = St.ChunkDataEnd;
          }
          break;
        }
        case St.ChunkDataEnd:
          // The CRLF after a chunk's data.
          if (b[i++] === LF) this.st = St.ChunkSize;
          break;
        case St.ChunkSize: {
          const c = b[i++]!;
          if (c === LF) this.chunkSizeLine();
          else if (c === CR) continue;
          else if (c === 0x3b /* ; */) this.st = St.ChunkExt;
          else {
            const d = c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x57 : c >= 0x41 && c <= 0x46 ? c - 0x37 : -1;
            if (d < 0 || ++this.chunkDigits > 8) throw new Error('bad chunk size');
            this.chunkSize = this.chunkSize * 16 + d;
          }
          break;
        }
        case St.ChunkExt:
          if (b[i++] === LF) this.chunkSizeLine();
          break;
        case St.Trailer: {
          const c = b[i++]!;
          if (c === LF) {
            if (this.trailerLineLen === 0) this.complete();
            this.trailerLineLen = 0;
          } else if (c !== CR) this.trailerLineLen++;
          break;
        }
        case St.UntilClose:
          this.on.body(b, i, n);
          i = n;
          break;
        case St.Done:
          // Bytes after a response that closes the connection: ignored.
          return;
      }
    }
  }

  /** The connection ended: completes a body that runs until the close. */
  end(): void {
    if (this.st === St.UntilClose) this.complete();
  }

  private head(b: Buffer, start: number, end: number): void {
    // The head is short; one latin1 string of it, lower-cased, is cheaper than a header object.
    const text = b.toString('latin1', start, end);
    if (!text.startsWith('HTTP/1.')) throw new Error(`not an HTTP/1 response: ${JSON.stringify(text.slice(0, 40))}`);
    const status = Number(text.slice(9, 12));
    if (!(status >= 100 && status <= 999)) throw new Error(`bad status line: ${JSON.stringify(text.slice(0, 40))}`);
    if (status < 200) return; // an interim answer (100 Continue): the real one follows
    const lower = text.toLowerCase();
    const connection = headerValue(lower, 'connection');
    const keepAlive = connection === null ? text[7] === '1' : !connection.includes('close') && (text[7] === '1' || connection.includes('keep-alive'));
    const ka = headerValue(lower, 'keep-alive');
    const t = ka === null ? null : /timeout=(\d+)/.exec(ka);
    const h: Head = { status, keepAlive, keepAliveMs: t ? Number(t[1]) * 1000 : null };
    const te = headerValue(lower, 'transfer-encoding');
    const cl = headerValue(lower, 'content-length');
    if (status === 204 || status === 304) {
      this.remaining = 0;
      this.st = St.Length;
    } else if (te !== null && te.includes('chunked')) this.st = St.ChunkSize;
    else if (cl !== null) {
      this.remaining = Number(cl);
      if (!Number.isSafeInteger(this.remaining) || this.remaining < 0) throw new Error(`bad content-length ${cl}`);
      this.st = St.Length;
    } else {
      h.keepAlive = false;
      this.st = St.UntilClose;
    }
    if (this.st === St.ChunkSize) {
      this.chunkSize = 0;
      this.chunkDigits = 0;
    }
    this.on.head(h);
    if (!h.keepAlive && this.st !== St.UntilClose) this.closeAfter = true;
    if (this.st === St.Length && this.remaining === 0) this.complete();
  }

  private chunkSizeLine(): void {
    if (this.chunkDigits === 0) throw new Error('bad chunk size');
    this.remaining = this.chunkSize;
    this.chunkSize = 0;
    this.chunkDigits = 0;
    if (this.remaining === 0) {
      this.trailerLineLen = 0;
      this.st = St.Trailer;
    } else this.st = St.ChunkData;
  }

  private complete(): void {
    this.st = this.closeAfter ? St.Done : St.Head;
    this.closeAfter = false;
    this.on.complete();
  }
}

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
