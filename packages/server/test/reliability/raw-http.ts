/**
 * HTTP over a raw socket, for what fetch refuses to send: a Content-Length that lies, invalid
 * UTF-8 bytes, malformed request lines, and clients that trickle or stall. Every response the
 * server writes on the connection is parsed, and the time until the server closed it is kept.
 */
import { connect } from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface RawExchange {
  responses: RawResponse[];
  /** The server closed (or reset) the connection before the deadline. */
  closedByServer: boolean;
  /** From the first byte sent until the server closed the connection (or the deadline). */
  elapsedMs: number;
  raw: Buffer;
}

/** A step of what the client sends: bytes, or a pause. */
export type Step = string | Buffer | { pause: number };

function parseResponses(buf: Buffer): RawResponse[] {
  const out: RawResponse[] = [];
  let rest = buf;
  for (;;) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) break;
    const head = rest.subarray(0, end).toString('latin1').split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(head[0] ?? '');
    if (!m) break;
    const headers: Record<string, string> = {};
    for (const line of head.slice(1)) {
      const c = line.indexOf(':');
      if (c > 0) headers[line.slice(0, c).trim().toLowerCase()] = line.slice(c + 1).trim();
    }
    const len = Number(headers['content-length'] ?? '0');
    const body = rest.subarray(end + 4, end + 4 + len);
    out.push({ status: Number(m[1]), headers, body: body.toString('utf8') });
    rest = rest.subarray(end + 4 + len);
  }
  return out;
}

/**
 * Sends the steps in order on one connection and reads until the server closes it or
 * `deadlineMs` passes. `halfClose` ends the client's side after the last step.
 */
export function rawExchange(port: number, steps: Step[], opts: { deadlineMs?: number; halfClose?: boolean } = {}): Promise<RawExchange> {
  const deadlineMs = opts.deadlineMs ?? 5000;
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const started = performance.now();
    let done = false;
    const sock = connect(port, '127.0.0.1');
    const finish = (closedByServer: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      const raw = Buffer.concat(chunks);
      sock.destroy();
      resolve({ responses: parseResponses(raw), closedByServer, elapsedMs: performance.now() - started, raw });
    };
    const timer = setTimeout(() => finish(false), deadlineMs);
    sock.on('data', (d: Buffer) => chunks.push(d));
    sock.on('close', () => finish(true));
    sock.on('error', () => finish(true));
    const write = async () => {
      for (const s of steps) {
        if (done || sock.destroyed) return;
        if (typeof s === 'string' || Buffer.isBuffer(s)) {
          if (sock.writable) sock.write(s);
        } else await new Promise((r) => setTimeout(r, s.pause));
      }
      if (opts.halfClose && !sock.destroyed) sock.end();
    };
    sock.on('connect', () => void write());
  });
}

/** A request head with the given lines, ended by the blank line. */
export function head(requestLine: string, headers: Record<string, string>): string {
  return `${requestLine}\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;
}
