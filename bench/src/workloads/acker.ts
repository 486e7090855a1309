/**
 * Recipients that acknowledge, as a real client does (`--ack N`): while a phase runs, each DM
 * recipient device posts `POST /api/ack` with the ids its stream received, N at a time, one ack in
 * flight per device, on raw keep-alive sockets of its own (not the senders'). Without it the
 * queues only grow during the DM workload and the service never pays for an ack.
 */
import { jsonRequestHead, RawPool, withJson } from '../raw-http.js';
import type { EventStream } from '../sse.js';

export interface AckingDevice {
  stream: EventStream;
  port: number;
  cookie: string;
  device: string;
}

/** How often the devices look for a full batch. */
const TICK_MS = 5;

export class Acker {
  private readonly pools = new Map<number, RawPool>();
  private readonly heads: string[];
  private readonly busy: boolean[];
  private timer: NodeJS.Timeout | null = null;
  acks = 0;
  errors = 0;
  firstError: string | null = null;

  constructor(
    private readonly devices: readonly AckingDevice[],
    private readonly batch: number,
  ) {
    for (const d of devices) if (!this.pools.has(d.port)) this.pools.set(d.port, new RawPool(d.port, 32));
    this.heads = devices.map((d) => jsonRequestHead(d.port, 'POST', '/api/ack', { Cookie: d.cookie, 'X-Device': d.device }));
    this.busy = devices.map(() => false);
  }

  start(): void {
    for (const d of this.devices) d.stream.ids = [];
    this.timer ??= setInterval(() => this.tick(), TICK_MS);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  close(): void {
    this.stop();
    for (const p of this.pools.values()) p.close();
  }

  private tick(): void {
    this.devices.forEach((d, i) => {
      const ids = d.stream.ids!;
      if (this.busy[i] || ids.length < this.batch) return;
      const body = JSON.stringify({ ids: ids.splice(0, this.batch) });
      this.busy[i] = true;
      this.pools
        .get(d.port)!
        .request(withJson(this.heads[i]!, body), 204)
        .then(
          (r) => {
            if (r.status === 204) this.acks++;
            else {
              this.errors++;
              this.firstError ??= `HTTP ${r.status} ${r.body.slice(0, 200)}`;
            }
          },
          (e: Error) => {
            this.errors++;
            this.firstError ??= e.message;
          },
        )
        .finally(() => (this.busy[i] = false));
    });
  }
}
