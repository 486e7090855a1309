/**
 * DM throughput and latency: `pairs` sender accounts (one device each, no stream), each sending
 * to its own recipient whose devices (two unless `--devices` says otherwise) hold open event
 * streams. Each repetition measures the
 * closed-loop maximum, then latency paced at a fixed rate and at half of that maximum.
 *
 * With several service instances, sender i sends through instance i mod N, and its recipient's
 * streams are on the same instance for the first N pairs, on the next one for the N pairs after,
 * and so on alternately: half of the pairs cross instances (over the Redis bus), for any N ≥ 2.
 */
import { dmBody } from '../fixtures.js';
import type { Options } from '../options.js';
import { EventStream } from '../sse.js';
import type { Target } from '../targets.js';
import { closedLoop, openLoop, type Sender } from './load.js';
import { measurePhase, progress, type PhaseResult } from './phase.js';
import { pool } from '../http.js';
import { Acker, type AckingDevice } from './acker.js';

export interface DmRun {
  max: PhaseResult;
  paced: PhaseResult;
  half: PhaseResult;
}

export class DmWorkload {
  private constructor(
    private readonly t: Target,
    private readonly senders: Sender[],
    private readonly streams: EventStream[],
    private readonly acker: Acker | null,
    /** Deliveries per message: the recipient's devices. */
    private readonly fanout: number,
  ) {}

  static async setup(t: Target, o: Options, tag: string): Promise<DmWorkload> {
    const from = await t.createAccounts(`${tag}s`, o.pairs, 1);
    const to = await t.createAccounts(`${tag}r`, o.pairs, o.recipientDevices);
    const n = t.children.length;
    const senders: Sender[] = from.map((a, i) => ({ cookie: a.cookie, device: a.devices[0]!, instance: i % n, next: () => dmBody(to[i]!.nick) }));
    const streams: EventStream[] = [];
    const acking: AckingDevice[] = [];
    const devices = to.flatMap((a, i) => a.devices.map((d) => ({ a, d, port: t.port(i + (Math.floor(i / n) % 2)) })));
    await pool(devices, 50, async ({ a, d, port }) => {
      const s = await EventStream.open(port, d, a.cookie);
      await s.waitReady(60_000);
      streams.push(s);
      acking.push({ stream: s, port, cookie: a.cookie, device: d });
    });
    return new DmWorkload(t, senders, streams, o.ackBatch > 0 ? new Acker(acking, o.ackBatch) : null, o.recipientDevices);
  }

  async run(o: Options): Promise<DmRun> {
    const apis = this.t.apis;
    this.t.sizeFor(this.senders);
    const maxCount = 1_000_000;
    this.acker?.start();
    // Warm-up: sockets open, code paths compiled; not measured.
    await measurePhase(this.t, this.streams, this.fanout, (rec) =>
      closedLoop(apis, this.senders, rec, { durationMs: Math.min(1000, o.durationMs), maxCount }),
    );
    const max = await measurePhase(this.t, this.streams, this.fanout, (rec) =>
      closedLoop(apis, this.senders, rec, { durationMs: o.durationMs, maxCount }),
    );
    progress(this.t, 'dm max', max);
    const paced = await this.paced(o, o.pacedRate);
    progress(this.t, `dm ${o.pacedRate}/s`, paced);
    const half = await this.paced(o, Math.max(1, Math.round(max.throughput / 2)));
    progress(this.t, `dm ${half.rate}/s (½)`, half);
    this.acker?.stop();
    if (this.acker) {
      const a = this.acker;
      process.stdout.write(
        `  ${this.t.name.padEnd(7)} dm acks        ${a.acks} answered 204, ${a.errors} failed${a.firstError ? ` (first: ${a.firstError})` : ''}\n`,
      );
    }
    return { max, paced, half };
  }

  private paced(o: Options, rate: number): Promise<PhaseResult> {
    return measurePhase(
      this.t,
      this.streams,
      this.fanout,
      (rec) => openLoop(this.t.apis, this.senders, rec, { rate, durationMs: o.durationMs, maxInFlight: Math.max(1000, rate) }),
      rate,
    );
  }

  close(): void {
    this.acker?.close();
    for (const s of this.streams) s.close();
  }
}
