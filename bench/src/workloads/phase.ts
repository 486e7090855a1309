/**
 * One measured send phase: a fresh latency recorder on the receiving streams, the server's CPU
 * time (summed over its processes), its PostgreSQL's and Redis's, and the generator's around it,
 * and a bounded wait for the deliveries still on their way.
 */
import type { EventStream } from '../sse.js';
import { Recorder, type Latency, type Tails } from '../stats.js';
import type { Target } from '../targets.js';
import type { SendResult } from './load.js';

export interface PhaseResult {
  /** The paced rate asked for (messages per second); absent for closed loops. */
  rate?: number;
  accepted: number;
  errors: number;
  firstError: string | null;
  skipped: number;
  elapsedMs: number;
  /** Accepted messages per second. */
  throughput: number;
  /** Deliveries expected (accepted × targets per message) and received. */
  expected: number;
  delivered: number;
  deliveriesPerSec: number;
  latency: Latency;
  /** Server user + system CPU time over the phase (and the system part alone), and per 1,000 deliveries. */
  serverCpuMs: number;
  serverSystemMs: number;
  cpuMsPer1000Deliveries: number;
  /** The server's read- and write-type system calls (/proc/<pid>/io) over the phase, per delivery. */
  readCallsPerDelivery: number;
  writeCallsPerDelivery: number;
  /** CPU time of the whole PostgreSQL and Redis servers over the phase (they are shared), with --backend postgres only. */
  postgresCpuMs?: number;
  redisCpuMs?: number;
  /** The load generator's own CPU time over the phase (it shares the two cores), and the phase's wall time with the drain wait. */
  generatorCpuMs: number;
  wallMs: number;
  /** When the phase began and ended (drain included) on the monotonic clock, in ms: the window `--perf` reads. */
  monoFromMs: number;
  monoToMs: number;
  /** When the phase began, as an ISO time: to set beside PostgreSQL's log (its checkpoints) when a phase stalls. */
  startedAt: string;
}

/** CLOCK_MONOTONIC in ms, the clock of `perf record -k mono` (perf-layers.ts). */
export const monoMs = (): number => Number(process.hrtime.bigint()) / 1e6;

const DRAIN_TIMEOUT_MS = 10_000;

export async function measurePhase(
  t: Target,
  streams: EventStream[],
  fanout: number,
  send: (rec: Recorder) => Promise<SendResult>,
  rate?: number,
): Promise<PhaseResult> {
  const rec = new Recorder();
  for (const s of streams) s.onMsg = rec.onMsg;
  const store0 = t.storeCpu?.read();
  const cpu0 = t.cpu();
  const io0 = t.io();
  const gen0 = process.cpuUsage();
  const startedAt = new Date().toISOString();
  const wall0 = performance.now();
  const mono0 = monoMs();
  const r = await send(rec);
  const expected = r.accepted * fanout;
  const delivered = await rec.drain(expected, DRAIN_TIMEOUT_MS);
  const cpu1 = t.cpu();
  const io1 = t.io();
  const serverSystemMs = cpu1.system - cpu0.system;
  const serverCpuMs = cpu1.user - cpu0.user + serverSystemMs;
  const gen = process.cpuUsage(gen0);
  const wallMs = performance.now() - wall0;
  const mono1 = monoMs();
  const store1 = t.storeCpu?.read();
  for (const s of streams) s.onMsg = null;
  return {
    ...(rate !== undefined ? { rate } : {}),
    accepted: r.accepted,
    errors: r.errors,
    firstError: r.firstError,
    skipped: r.skipped,
    elapsedMs: r.elapsedMs,
    throughput: (r.accepted * 1000) / r.elapsedMs,
    expected,
    delivered,
    deliveriesPerSec: (delivered * 1000) / r.elapsedMs,
    latency: rec.latency(),
    serverCpuMs,
    serverSystemMs,
    cpuMsPer1000Deliveries: delivered > 0 ? (serverCpuMs * 1000) / delivered : NaN,
    readCallsPerDelivery: delivered > 0 ? (io1.reads - io0.reads) / delivered : NaN,
    writeCallsPerDelivery: delivered > 0 ? (io1.writes - io0.writes) / delivered : NaN,
    ...(store0 && store1 ? { postgresCpuMs: store1.postgres - store0.postgres, redisCpuMs: store1.redis - store0.redis } : {}),
    generatorCpuMs: (gen.user + gen.system) / 1000,
    wallMs,
    monoFromMs: mono0,
    monoToMs: mono1,
    startedAt,
  };
}

/** CPU time `ms` of a phase per 1,000 of its deliveries. */
export const per1000 = (ms: number, p: PhaseResult): number => (p.delivered > 0 ? (ms * 1000) / p.delivered : NaN);

function tailText(t: Tails): string {
  return Object.entries(t.per100ms)
    .map(([w, n]) => `${w}:${n}`)
    .join(' ');
}

/** One line of progress on stderr, so a long run shows where it is. */
export function progress(t: Target, what: string, p: PhaseResult): void {
  const l = p.latency;
  const lost = p.expected - p.delivered;
  process.stderr.write(
    `  ${t.name.padEnd(7)} ${what.padEnd(14)} ${p.throughput.toFixed(0).padStart(6)} msg/s ${p.deliveriesPerSec.toFixed(0).padStart(7)} del/s` +
      `  p50 ${l.p50.toFixed(2)} p95 ${l.p95.toFixed(2)} p99 ${l.p99.toFixed(2)} ms  cpu/1k ${p.cpuMsPer1000Deliveries.toFixed(1)} ms (sys ${((100 * p.serverSystemMs) / p.serverCpuMs).toFixed(0)}%)` +
      `  calls/del r ${p.readCallsPerDelivery.toFixed(2)} w ${p.writeCallsPerDelivery.toFixed(2)}` +
      (p.postgresCpuMs !== undefined
        ? `  pg/1k ${per1000(p.postgresCpuMs, p).toFixed(1)} redis/1k ${per1000(p.redisCpuMs ?? NaN, p).toFixed(1)} ms`
        : '') +
      (p.errors ? `  errors ${p.errors} (${p.firstError})` : '') +
      (p.skipped ? `  skipped ${p.skipped}` : '') +
      (lost ? `  LOST ${lost}` : '') +
      (l.tails ? `\n    deliveries ≥ p99 by 100 ms of send time from ${l.tails.firstSendEpochMs}: ${tailText(l.tails)}` : '') +
      '\n',
  );
}
