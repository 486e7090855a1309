/**
 * Replay: `replayCount` envelopes queued for one offline device, then the time from opening its
 * event stream to `ready`, then acking every id in batches of 500 (the ack limit). The ceiling
 * stores nothing, so this workload runs on the service only. With several service instances,
 * the senders are dealt round them; the stream uses the first.
 */
import { LIMITS } from '@svc/protocol';
import { dmBody } from '../fixtures.js';
import { expect } from '../http.js';
import type { Options } from '../options.js';
import { EventStream } from '../sse.js';
import type { Account, Target } from '../targets.js';
import { closedLoop, type Sender } from './load.js';

export interface ReplayRun {
  queued: number;
  fillMs: number;
  /** From the start of the stream request to the `ready` event. */
  toReadyMs: number;
  replayed: number;
  /** All acks, sequential batches of 500. */
  ackMs: number;
  ackBatches: number;
}

const SENDERS = 10;

export class ReplayWorkload {
  private constructor(
    private readonly t: Target,
    private readonly senders: Sender[],
    private readonly recipient: Account,
  ) {}

  static async setup(t: Target, tag: string): Promise<ReplayWorkload> {
    const [recipient] = await t.createAccounts(`${tag}r`, 1, 1);
    const from = await t.createAccounts(`${tag}s`, SENDERS, 1);
    const n = t.children.length;
    const senders = from.map((a, i) => ({ cookie: a.cookie, device: a.devices[0]!, instance: i % n, next: () => dmBody(recipient!.nick) }));
    return new ReplayWorkload(t, senders, recipient!);
  }

  async run(o: Options): Promise<ReplayRun> {
    const api = this.t.api;
    this.t.sizeFor(this.senders);
    const fill = await closedLoop(this.t.apis, this.senders, null, { durationMs: 120_000, maxCount: o.replayCount });
    if (fill.errors > 0) throw new Error(`replay: filling the queue failed: ${fill.firstError}`);
    const device = this.recipient.devices[0]!;
    const t0 = performance.now();
    const s = await EventStream.open(this.t.port(0), device, this.recipient.cookie, { keepIds: true, timeoutMs: 60_000 });
    await s.waitReady(60_000);
    const toReadyMs = performance.now() - t0;
    const ids = s.ids ?? [];
    const t1 = performance.now();
    let batches = 0;
    for (let i = 0; i < ids.length; i += LIMITS.ackBatch) {
      const r = await api.call('POST', '/api/ack', { body: { ids: ids.slice(i, i + LIMITS.ackBatch) }, cookie: this.recipient.cookie, device });
      expect(r, 'ack', 204);
      batches++;
    }
    const ackMs = performance.now() - t1;
    s.close();
    const run = { queued: fill.accepted, fillMs: fill.elapsedMs, toReadyMs, replayed: ids.length, ackMs, ackBatches: batches };
    process.stderr.write(
      `  ${this.t.name.padEnd(7)} replay         ${run.replayed}/${run.queued} to ready ${toReadyMs.toFixed(0)} ms, ack ${ackMs.toFixed(0)} ms in ${batches} batches (fill ${fill.elapsedMs.toFixed(0)} ms)\n`,
    );
    // The stream closes on the server asynchronously; the next fill must find the device offline.
    await new Promise((r) => setTimeout(r, 200));
    return run;
  }
}
