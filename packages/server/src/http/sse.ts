/**
 * The bytes of an event stream (docs/API.md): the SSE frame of each event, the keep-alive, and
 * the sink that writes them to the HTTP response.
 */
import type { ServerResponse } from 'node:http';
import type { EventName } from '@svc/protocol';
import type { StreamEvent } from '../bus/types.js';
import type { StreamSink } from '../bus/streams.js';
import { STREAM_HEADERS } from './headers.js';

/** The SSE comment sent as keep-alive. */
export const PING_FRAME = ': ping\n\n';

/** One SSE frame. Event names are fixed and ids are validated ULIDs; a line break in either would forge fields. */
export function sseFrame(event: EventName, data: string, id?: string): string {
  if (/[\r\n]/.test(event) || (id !== undefined && /[\r\n]/.test(id))) throw new Error('line break in SSE field');
  return id === undefined ? `event: ${event}\ndata: ${data}\n\n` : `event: ${event}\nid: ${id}\ndata: ${data}\n\n`;
}

/**
 * Where an event keeps its frame once made. A delivery is one object handed to the stream of each
 * of its target devices, so its frame is made once for all of them (also for a stream that held it
 * during its replay). A symbol key stays out of the JSON the Redis bus publishes; a WeakMap made
 * replays slower (docs/DESIGN.md).
 */
const FRAME = Symbol('sse frame');

type Framed = StreamEvent & { [FRAME]?: string };

export function frameOf(ev: StreamEvent): string {
  return ((ev as Framed)[FRAME] ??= sseFrame(ev.event, ev.data, ev.id));
}

/**
 * The head of every event stream, one object shared by all of them. Headers set one by one
 * (`setHeader`) are kept per response, in an object of their own with an array per header, for as
 * long as the stream stays open; a head given whole to `writeHead` is not copied. With the sink
 * below and the route's close handler (routes/events.ts), 15.5 → 12.8 KiB per idle stream
 * (docs/BENCHMARKS.md). `connection: close`: the socket of an ended stream is not reused.
 */
const STREAM_HEAD: Readonly<Record<string, string>> = { ...STREAM_HEADERS, connection: 'close' };

/**
 * The sink of a stream whose response the route took over from the framework. Its 200 and head
 * leave with the first bytes (a replayed `msg`, `ready` or a ping), so that a failure before them
 * can still be answered as a 500. A class, not an object of closures: ten thousand idle streams
 * share its methods instead of holding seven closures each.
 */
export class ResponseSink implements StreamSink {
  constructor(private readonly res: ServerResponse) {}

  private write(chunk: string): boolean {
    if (!this.res.headersSent) this.res.writeHead(200, STREAM_HEAD);
    return this.res.write(chunk);
  }

  send(ev: StreamEvent): boolean {
    return this.write(frameOf(ev));
  }

  ping(): void {
    this.write(PING_FRAME);
  }

  get buffered(): number {
    return this.res.writableLength;
  }

  drained(): Promise<void> {
    const res = this.res;
    return new Promise<void>((resolve) => {
      if (res.destroyed || !res.writableNeedDrain) return resolve();
      const done = () => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.once('drain', done);
      res.once('close', done);
    });
  }

  end(): void {
    if (this.res.writableEnded) return;
    if (!this.res.headersSent) this.res.writeHead(200, STREAM_HEAD);
    this.res.end();
  }

  destroy(): void {
    this.res.destroy();
  }

  get gone(): boolean {
    return this.res.destroyed;
  }
}
