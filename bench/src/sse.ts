/**
 * Event streams as the load generator holds them: one plain socket each (no pooling, no
 * node:http), the GET written by hand, the response head and its chunked (or unframed) body read
 * by http-response-parser.ts, and an SSE scanner that works on the bytes as they come: it finds line
 * ends with `indexOf`, looks only at lines that start with `event:` or `id:`, turns only the id
 * into a string, and skips `data:` lines (the JSON) without reading them.
 */
import { connect, type Socket } from 'node:net';
import { READ_BUFFER, ResponseParser, type Head, type ParserEvents } from './http-response-parser.js';

/** Where a stream reports its `msg` events; swapped per workload. */
export type MsgListener = (envelopeId: string, at: number) => void;

const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
/** A line split across reads is kept only this far (event and id lines are short); longer ones are skipped. */
const MAX_CARRY = 1024;

const enum Ev {
  None,
  Msg,
  Ready,
  Other,
}

const EVENT = Buffer.from('event:');
const ID = Buffer.from('id:');
const MSG = Buffer.from('msg');
const READY = Buffer.from('ready');

/** Whether bytes [at, at + word.length) of `b` are `word`, within `end`. */
function bytesAre(b: Buffer, at: number, end: number, word: Buffer): boolean {
  if (end - at < word.length) return false;
  for (let k = 0; k < word.length; k++) if (b[at + k] !== word[k]) return false;
  return true;
}

export class EventStream implements ParserEvents {
  onMsg: MsgListener | null = null;
  msgCount = 0;
  /** Envelope ids seen, kept only when asked for (the replay workload acks them). */
  ids: string[] | null = null;
  readonly ready: Promise<void>;
  closed = false;

  private sock: Socket | null = null;
  private readonly parser = new ResponseParser(this);
  private readyResolve: (() => void) | null = null;
  /** Until the head: how open() learns the status. */
  private onHead: ((h: Head) => void) | null = null;
  /** A non-200 answer's body, for the error message. */
  private errorBody: Buffer[] | null = null;
  private onErrorEnd: (() => void) | null = null;

  // The SSE scanner's state between reads.
  private event = Ev.None;
  private id: string | null = null;
  /** The start of a line split across reads (an event or id line), or null. */
  private carry: Buffer | null = null;
  /** Inside a line that does not matter (data, comment, or too long): skip to its end. */
  private skipping = false;
  /** performance.now() of the current read, taken at its first `msg`; -1 until then. */
  private at = -1;

  private constructor() {
    this.ready = new Promise((resolve) => (this.readyResolve = resolve));
  }

  /**
   * Opens the device's stream. Resolves once the 200 headers arrived; `ready` resolves on the
   * `ready` event. `localAddress` spreads many streams over loopback addresses (each has its own ports).
   */
  static open(
    port: number,
    device: string,
    cookie: string,
    o: { localAddress?: string; keepIds?: boolean; onMsg?: MsgListener; timeoutMs?: number } = {},
  ): Promise<EventStream> {
    const s = new EventStream();
    if (o.keepIds) s.ids = [];
    if (o.onMsg) s.onMsg = o.onMsg;
    if (/[\r\n]/.test(cookie)) return Promise.reject(new Error(`stream ${device}: cookie has a line break`));
    return new Promise((resolve, reject) => {
      let settled = false;
      const fail = (e: Error) => {
        clearTimeout(timer);
        s.close();
        if (!settled) {
          settled = true;
          reject(e);
        }
      };
      const onRead = (n: number, buf: Uint8Array): boolean => {
        try {
          s.at = -1;
          s.parser.feed((buf as Buffer).subarray(0, n));
        } catch (e) {
          fail(new Error(`stream ${device}: ${(e as Error).message}`));
        }
        return true;
      };
      const sock = connect({
        host: '127.0.0.1',
        port,
        onread: { buffer: READ_BUFFER, callback: onRead },
        ...(o.localAddress ? { localAddress: o.localAddress } : {}),
      });
      s.sock = sock;
      const timer = setTimeout(() => fail(new Error(`stream ${device}: no answer`)), o.timeoutMs ?? 30_000);
      s.onHead = (h) => {
        s.onHead = null;
        if (h.status === 200) {
          clearTimeout(timer);
          settled = true;
          resolve(s);
          return;
        }
        s.errorBody = [];
        s.onErrorEnd = () => {
          const body = Buffer.concat(s.errorBody ?? []).toString('utf8');
          fail(new Error(`stream ${device}: HTTP ${h.status} ${body}`));
        };
      };
      sock.setNoDelay(true);
      const ended = (e?: Error) => {
        s.closed = true;
        try {
          s.parser.end();
        } catch {
          // nothing more to read
        }
        if (s.onErrorEnd) s.onErrorEnd();
        else fail(e ?? new Error(`stream ${device}: closed before an answer`));
      };
      sock.on('error', (e) => ended(e));
      sock.on('close', () => ended());
      sock.write(
        `GET /api/events?device=${encodeURIComponent(device)} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
          `Origin: http://127.0.0.1:${port}\r\nCookie: ${cookie}\r\nAccept: text/event-stream\r\n\r\n`,
      );
    });
  }

  /** Waits for `ready`, at most `timeoutMs`; every wait in the harness is bounded. */
  async waitReady(timeoutMs = 30_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no ready event within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([this.ready, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  close(): void {
    this.closed = true;
    this.sock?.destroy();
  }

  /** ParserEvents: the response head. */
  head(h: Head): void {
    this.onHead?.(h);
  }

  /** ParserEvents: the stream ended (the server closed it, or a non-200 answer is complete). */
  complete(): void {
    this.closed = true;
    if (this.onErrorEnd) {
      const end = this.onErrorEnd;
      this.onErrorEnd = null;
      end();
    }
  }

  /** ParserEvents: body bytes [start, end) of `b`: SSE lines. */
  body(b: Buffer, start: number, end: number): void {
    if (this.errorBody) {
      this.errorBody.push(Buffer.from(b.subarray(start, end)));
      return;
    }
    let i = start;
    while (i < end) {
      let nl = b.indexOf(LF, i);
      if (nl >= end) nl = -1;
      if (this.skipping) {
        if (nl < 0) return;
        this.skipping = false;
        i = nl + 1;
        continue;
      }
      if (this.carry) {
        if (nl < 0) {
          if (this.carry.length + (end - i) > MAX_CARRY) {
            this.carry = null;
            this.skipping = true;
          } else this.carry = Buffer.concat([this.carry, b.subarray(i, end)]);
          return;
        }
        const line = Buffer.concat([this.carry, b.subarray(i, nl)]);
        this.carry = null;
        this.line(line, 0, line.length);
        i = nl + 1;
        continue;
      }
      if (nl < 0) {
        // A line split across reads: keep it only if it may matter.
        const c = b[i];
        if (c === 0x65 /* e */ || c === 0x69 /* i */ || c === CR) this.carry = Buffer.from(b.subarray(i, end));
        else this.skipping = true;
        return;
      }
      this.line(b, i, nl);
      i = nl + 1;
    }
  }

  /** One line, bytes [start, end) without its LF. */
  private line(b: Buffer, start: number, end: number): void {
    if (end > start && b[end - 1] === CR) end--;
    if (end === start) return this.dispatch();
    const c = b[start];
    if (c === 0x65 /* e */ && bytesAre(b, start, end, EVENT)) {
      let v = start + EVENT.length;
      if (b[v] === SPACE) v++;
      const len = end - v;
      this.event = len === MSG.length && bytesAre(b, v, end, MSG) ? Ev.Msg : len === READY.length && bytesAre(b, v, end, READY) ? Ev.Ready : Ev.Other;
    } else if (c === 0x69 /* i */ && bytesAre(b, start, end, ID)) {
      let v = start + ID.length;
      if (b[v] === SPACE) v++;
      this.id = b.toString('latin1', v, end);
    }
    // data:, comments (`:`) and other fields do not matter here.
  }

  /** A blank line: the end of one event. */
  private dispatch(): void {
    if (this.event === Ev.Msg && this.id !== null) {
      if (this.at < 0) this.at = performance.now();
      this.msgCount++;
      this.ids?.push(this.id);
      this.onMsg?.(this.id, this.at);
    } else if (this.event === Ev.Ready) {
      this.readyResolve?.();
      this.readyResolve = null;
    }
    this.event = Ev.None;
    this.id = null;
  }
}
