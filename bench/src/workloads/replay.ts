/**
 * Queued envelopes, on the service only (the ceiling stores nothing). Each repetition:
 * - offline: `offlineCount` envelopes sent by 10 senders at once to a device without a stream,
 *   timed from the first send to the last 202 (every answered envelope is stored); the device's
 *   queue is then emptied, untimed, so that the next repetition starts from an empty queue;
 * - replay: `replayCount` envelopes queued for another such device the same way, then the time
 *   from opening its event stream to `ready`, then acking every id in batches of 500 (the ack limit).
 * Before the first repetition, one more runs untimed (a warm-up, see `run`). With several service
 * instances, the senders are dealt round them; the streams use the first.
 */
import { LIMITS } from '@svc/protocol';
import { dmBody } from '../fixtures.js';
import { expect } from '../http.js';
import type { Options } from '../options.js';
import { EventStream } from '../sse.js';
import type { Account, Target } from '../targets.js';
import { closedLoop, type Sender } from './load.js';
import { monoMs } from './phase.js';

export interface ReplayRun {
  /** Envelopes stored for the offline device, and the time from the first send to the last answer. */
  offlineQueued: number;
  offlineMs: number;
  /** The service's CPU time (user + system, all instances) during the offline fill, in ms. */
  offlineCpuMs: number;
  /** The offline fill's window on the monotonic clock, in ms (`--perf`). */
  offlineFromMs: number;
  offlineToMs: number;
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
    private readonly toOffline: Sender[],
    private readonly offline: Account,
    private readonly toReplay: Sender[],
    private readonly recipient: Account,
  ) {}

  static async setup(t: Target, tag: string): Promise<ReplayWorkload> {
    const [offline, recipient] = await t.createAccounts(`${tag}r`, 2, 1);
    const from = await t.createAccounts(`${tag}s`, SENDERS, 1);
    const n = t.children.length;
    const sendersTo = (to: Account): Sender[] =>
      from.map((a, i) => ({ cookie: a.cookie, device: a.devices[0]!, instance: i % n, next: () => dmBody(to.nick) }));
    return new ReplayWorkload(t, sendersTo(offline!), offline!, sendersTo(recipient!), recipient!);
  }

  /** Set once a whole repetition has run untimed (see `run`). */
  private warmed = false;

  async run(o: Options): Promise<ReplayRun> {
    this.t.sizeFor(this.toOffline);
    // Warm-up, as the DM workload has one: a whole repetition, untimed, before the first. The
    // replay's stream and acks give objects the sends share (Node's HTTP code, Fastify's reply,
    // our route) shapes the sends had not made, and V8 compiles the send path again after the
    // first drain, on the second core the fill needs. Without it the first of three fills took
    // about twice as long as the next two (docs/BENCHMARKS.md).
    if (!this.warmed) {
      await this.repetition(o);
      this.warmed = true;
    }
    const run = await this.repetition(o);
    process.stderr.write(
      `  ${this.t.name.padEnd(7)} replay         ${run.replayed}/${run.queued} to ready ${run.toReadyMs.toFixed(0)} ms, ack ${run.ackMs.toFixed(0)} ms in ${run.ackBatches} batches (fill ${run.fillMs.toFixed(0)} ms); ${run.offlineQueued} offline stored in ${run.offlineMs.toFixed(0)} ms (service CPU ${run.offlineCpuMs.toFixed(0)} ms)\n`,
    );
    return run;
  }

  private async repetition(o: Options): Promise<ReplayRun> {
    const cpu0 = this.t.cpu();
    const mono0 = monoMs();
    const offline = await this.fill(this.toOffline, o.offlineCount);
    const mono1 = monoMs();
    const cpu1 = this.t.cpu();
    await this.drain(this.offline);
    const fill = await this.fill(this.toReplay, o.replayCount);
    const d = await this.drain(this.recipient);
    return {
      offlineQueued: offline.accepted,
      offlineMs: offline.elapsedMs,
      offlineCpuMs: cpu1.user + cpu1.system - cpu0.user - cpu0.system,
      offlineFromMs: mono0,
      offlineToMs: mono1,
      queued: fill.accepted,
      fillMs: fill.elapsedMs,
      toReadyMs: d.toReadyMs,
      replayed: d.ids,
      ackMs: d.ackMs,
      ackBatches: d.batches,
    };
  }

  private async fill(senders: Sender[], count: number) {
    const r = await closedLoop(this.t.apis, senders, null, { durationMs: 120_000, maxCount: count });
    if (r.errors > 0) throw new Error(`replay: filling the queue failed: ${r.firstError}`);
    return r;
  }

  /** Opens the device's stream, waits for `ready`, acks every replayed id and closes it. */
  private async drain(to: Account): Promise<{ toReadyMs: number; ids: number; ackMs: number; batches: number }> {
    const device = to.devices[0]!;
    const t0 = performance.now();
    const s = await EventStream.open(this.t.port(0), device, to.cookie, { keepIds: true, timeoutMs: 60_000 });
    await s.waitReady(60_000);
    const toReadyMs = performance.now() - t0;
    const ids = s.ids ?? [];
    const t1 = performance.now();
    let batches = 0;
    for (let i = 0; i < ids.length; i += LIMITS.ackBatch) {
      const r = await this.t.api.call('POST', '/api/ack', { body: { ids: ids.slice(i, i + LIMITS.ackBatch) }, cookie: to.cookie, device });
      expect(r, 'ack', 204);
      batches++;
    }
    const ackMs = performance.now() - t1;
    s.close();
    // The stream closes on the server asynchronously; the next fill must find the device offline.
    await new Promise((r) => setTimeout(r, 200));
    return { toReadyMs, ids: ids.length, ackMs, batches };
  }
}
