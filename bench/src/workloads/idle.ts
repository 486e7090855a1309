/**
 * Idle streams: `idleStreams` event streams held open at once (accounts of 32 devices, the most
 * an account may have), and the server's resident memory per stream:
 * (RSS with the streams − RSS before) / count, each time in a freshly started server process
 * (the service keeps its store). Streams open in bounded batches, and their
 * sockets are spread over loopback source addresses so that ports never run short across runs.
 * With several service instances, the streams are dealt round them and the RSS is their sum.
 */
import { pool } from '../http.js';
import type { Options } from '../options.js';
import { EventStream } from '../sse.js';
import type { Account, Target } from '../targets.js';

export interface IdleRun {
  streams: number;
  rssBeforeBytes: number;
  rssWithBytes: number;
  bytesPerStream: number;
  openMs: number;
}

const DEVICES_PER_ACCOUNT = 32;
const OPEN_CONCURRENCY = 200;
/** 127.0.0.2 … 127.0.0.201: each source address has its own range of ephemeral ports. */
const SOURCE_ADDRESSES = 200;
const SETTLE_MS = 1500;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class IdleWorkload {
  private constructor(
    private readonly t: Target,
    private readonly devices: { a: Account; d: string }[],
  ) {}

  static async setup(t: Target, o: Options, tag: string): Promise<IdleWorkload> {
    const accounts = await t.createAccounts(tag, Math.ceil(o.idleStreams / DEVICES_PER_ACCOUNT), DEVICES_PER_ACCOUNT);
    const devices = accounts.flatMap((a) => a.devices.map((d) => ({ a, d }))).slice(0, o.idleStreams);
    return new IdleWorkload(t, devices);
  }

  async run(rep: number): Promise<IdleRun> {
    // A fresh process each time: a process that already held and dropped streams reuses that
    // memory, and its difference would understate the cost of a stream.
    await this.t.restart();
    await sleep(SETTLE_MS);
    const rssBeforeBytes = this.t.rss();
    const streams: EventStream[] = [];
    const t0 = performance.now();
    try {
      await pool(this.devices, OPEN_CONCURRENCY, async ({ a, d }, i) => {
        const localAddress = `127.0.${1 + (rep % 250)}.${2 + (i % SOURCE_ADDRESSES)}`;
        const s = await EventStream.open(this.t.port(i), d, a.cookie, { localAddress, timeoutMs: 60_000 });
        streams.push(s);
        await s.waitReady(60_000);
      });
      const openMs = performance.now() - t0;
      await sleep(SETTLE_MS);
      const rssWithBytes = this.t.rss();
      const open = streams.filter((s) => !s.closed).length;
      if (open !== this.devices.length) throw new Error(`idle: ${this.devices.length - open} streams closed early`);
      const run = { streams: open, rssBeforeBytes, rssWithBytes, bytesPerStream: (rssWithBytes - rssBeforeBytes) / open, openMs };
      process.stderr.write(
        `  ${this.t.name.padEnd(7)} idle           ${open} streams, RSS ${(rssBeforeBytes / 2 ** 20).toFixed(1)} → ${(rssWithBytes / 2 ** 20).toFixed(1)} MiB, ${(run.bytesPerStream / 1024).toFixed(1)} KiB/stream (opened in ${openMs.toFixed(0)} ms)\n`,
      );
      return run;
    } finally {
      for (const s of streams) s.close();
    }
  }
}
