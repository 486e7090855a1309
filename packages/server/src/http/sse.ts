/**
 * The bytes of an event stream (docs/API.md §3): the SSE frame of each event, the keep-alive, and
 * the sink that writes them to the HTTP response.
 */
import type { ServerResponse } from 'node:http';
import type { EventName } from '@svc/protocol';
import type { StreamEvent } from '../bus/types.js';
import type { StreamSink } from '../bus/streams.js';

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
 * replays slower (docs/DESIGN.md, "Event streams").
 */
const FRAME = Symbol('sse frame');

type Framed = StreamEvent & { [FRAME]?: string };

export function frameOf(ev: StreamEvent): string {
  return ((ev as Framed)[FRAME] ??= sseFrame(ev.event, ev.data, ev.id));
}

/** The sink of a stream whose response the route took over from the framework. */
export function responseSink(res: ServerResponse): StreamSink {
  return {
    send: (ev) => res.write(frameOf(ev)),
    ping: () => {
      res.write(PING_FRAME);
    },
    get buffered() {
      return res.writableLength;
    },
    drained: () =>
      new Promise<void>((resolve) => {
        if (res.destroyed || !res.writableNeedDrain) return resolve();
        const done = () => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.once('drain', done);
        res.once('close', done);
      }),
    end: () => {
      if (!res.writableEnded) res.end();
    },
    destroy: () => res.destroy(),
    get gone() {
      return res.destroyed;
    },
  };
}
