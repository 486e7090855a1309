/**
 * Event streams as the load generator holds them: one socket each (no pooling), a small SSE
 * parser that reads only the event name and the `id:` line (the envelope id), never the JSON.
 */
import { request, type ClientRequest, type IncomingMessage } from 'node:http';

/** Where a stream reports its `msg` events; swapped per workload. */
export type MsgListener = (envelopeId: string, at: number) => void;

export class EventStream {
  onMsg: MsgListener | null = null;
  msgCount = 0;
  /** Envelope ids seen, kept only when asked for (the replay workload acks them). */
  ids: string[] | null = null;
  private buf = '';
  private req: ClientRequest | null = null;
  private res: IncomingMessage | null = null;
  private readyResolve: (() => void) | null = null;
  readonly ready: Promise<void>;
  closed = false;

  private constructor() {
    this.ready = new Promise((resolve) => (this.readyResolve = resolve));
  }

  /**
   * Opens the device's stream. Resolves once the 200 headers arrived; `ready` resolves on the
   * `ready` event. `localAddress` spreads many streams over loopback addresses (each has its own ports).
   */
  static open(port: number, device: string, cookie: string, o: { localAddress?: string; keepIds?: boolean; onMsg?: MsgListener; timeoutMs?: number } = {}): Promise<EventStream> {
    const s = new EventStream();
    if (o.keepIds) s.ids = [];
    if (o.onMsg) s.onMsg = o.onMsg;
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          path: `/api/events?device=${encodeURIComponent(device)}`,
          headers: { cookie, origin: `http://127.0.0.1:${port}`, accept: 'text/event-stream' },
          agent: false,
          ...(o.localAddress ? { localAddress: o.localAddress } : {}),
        },
        (res) => {
          if (res.statusCode !== 200) {
            let body = '';
            res.on('data', (c: Buffer) => (body += c.toString()));
            res.on('end', () => reject(new Error(`stream ${device}: HTTP ${res.statusCode} ${body}`)));
            return;
          }
          s.res = res;
          res.setEncoding('utf8');
          res.on('data', (c: string) => s.feed(c));
          res.on('close', () => (s.closed = true));
          res.on('error', () => (s.closed = true));
          resolve(s);
        },
      );
      s.req = req;
      const timer = setTimeout(() => req.destroy(new Error(`stream ${device}: no answer`)), o.timeoutMs ?? 30_000);
      req.once('response', () => clearTimeout(timer));
      req.on('error', (e) => {
        clearTimeout(timer);
        s.closed = true;
        reject(e);
      });
      req.end();
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

  private feed(chunk: string): void {
    this.buf += chunk;
    let start = 0;
    for (;;) {
      const end = this.buf.indexOf('\n\n', start);
      if (end < 0) break;
      this.frame(start, end);
      start = end + 2;
    }
    this.buf = start === 0 ? this.buf : this.buf.slice(start);
  }

  private frame(start: number, end: number): void {
    const b = this.buf;
    if (b.startsWith('event: msg\n', start)) {
      const at = performance.now();
      const idStart = start + 11;
      if (!b.startsWith('id: ', idStart)) return;
      const idEnd = b.indexOf('\n', idStart);
      const id = b.slice(idStart + 4, idEnd < 0 || idEnd > end ? end : idEnd);
      this.msgCount++;
      this.ids?.push(id);
      this.onMsg?.(id, at);
    } else if (b.startsWith('event: ready\n', start)) {
      this.readyResolve?.();
      this.readyResolve = null;
    }
  }

  close(): void {
    this.closed = true;
    this.res?.destroy();
    this.req?.destroy();
  }
}
