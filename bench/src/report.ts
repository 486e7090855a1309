/**
 * From the repetitions of a run to the table: every figure is the median over the repetitions,
 * next to the ceiling's figure of the same run and their ratio, and the targets of
 * docs/BENCHMARKS.md with pass or fail.
 */
import type { IdleRun } from './workloads/idle.js';
import type { DmRun } from './workloads/dm.js';
import type { PhaseResult } from './workloads/phase.js';
import type { ReplayRun } from './workloads/replay.js';
import { median } from './stats.js';

export interface TargetRuns {
  idle: IdleRun[];
  dm: DmRun[];
  rooms: PhaseResult[];
  replay: ReplayRun[];
}

export interface Row {
  metric: string;
  service: number;
  ceiling: number | null;
  /** service / ceiling, when both exist. */
  ratio: number | null;
  /** Human text of the target, and whether it holds (null: no target, or not measured at full size). */
  target: string;
  pass: boolean | null;
  /** Digits to print. */
  digits: number;
}

/** The generator's CPU over a phase as a share of one core: near 100, the generator may be what limits. */
const genShare = (p: PhaseResult): number => (100 * p.generatorCpuMs) / p.wallMs;

const med = <T>(xs: T[], f: (x: T) => number): number => median(xs.map(f));

function row(
  metric: string,
  digits: number,
  service: number,
  ceiling: number | null,
  target = '',
  check?: (service: number, ratio: number | null) => boolean,
): Row {
  const ratio = ceiling === null || !Number.isFinite(ceiling) || ceiling === 0 ? null : service / ceiling;
  const measured = Number.isFinite(service);
  return { metric, service, ceiling, ratio, target, pass: check && measured ? check(service, ratio) : null, digits };
}

export function summaryRows(s: TargetRuns, c: TargetRuns, o: { pacedRate: number; replayCount: number }): Row[] {
  const rows: Row[] = [];
  if (s.dm.length > 0) {
    rows.push(
      row(
        'DM throughput, closed loop (msg/s)',
        0,
        med(s.dm, (r) => r.max.throughput),
        med(c.dm, (r) => r.max.throughput),
        'ratio ≥ 0.50',
        (_, q) => q !== null && q >= 0.5,
      ),
    );
    for (const p of ['p50', 'p95', 'p99'] as const)
      rows.push(
        row(
          `DM latency at full load, ${p} (ms)`,
          2,
          med(s.dm, (r) => r.max.latency[p]),
          med(c.dm, (r) => r.max.latency[p]),
        ),
      );
    rows.push(
      row(
        'Server CPU per 1,000 DM deliveries (ms)',
        1,
        med(s.dm, (r) => r.max.cpuMsPer1000Deliveries),
        med(c.dm, (r) => r.max.cpuMsPer1000Deliveries),
        'ratio ≤ 2',
        (_, q) => q !== null && q <= 2,
      ),
    );
    const sysShare = (r: DmRun) => (100 * r.max.serverSystemMs) / r.max.serverCpuMs;
    rows.push(row('… of which kernel (system) time (%)', 0, med(s.dm, sysShare), med(c.dm, sysShare)));
    rows.push(
      row(
        'Load generator CPU during DM max (% of one core)',
        0,
        med(s.dm, (r) => genShare(r.max)),
        med(c.dm, (r) => genShare(r.max)),
      ),
    );
    for (const p of ['p50', 'p95', 'p99'] as const) {
      const pass = p === 'p99' ? (v: number) => v <= 5 : undefined;
      rows.push(
        row(
          `DM latency paced at ${o.pacedRate}/s, ${p} (ms)`,
          2,
          med(s.dm, (r) => r.paced.latency[p]),
          med(c.dm, (r) => r.paced.latency[p]),
          p === 'p99' ? '≤ 5 ms' : '',
          pass,
        ),
      );
    }
    rows.push(
      row(
        'DM half-max pacing rate (msg/s)',
        0,
        med(s.dm, (r) => r.half.rate ?? NaN),
        med(c.dm, (r) => r.half.rate ?? NaN),
      ),
    );
    for (const p of ['p50', 'p95', 'p99'] as const) {
      const pass = p === 'p99' ? (v: number) => v <= 25 : undefined;
      rows.push(
        row(
          `DM latency paced at ½ max, ${p} (ms)`,
          2,
          med(s.dm, (r) => r.half.latency[p]),
          med(c.dm, (r) => r.half.latency[p]),
          p === 'p99' ? '≤ 25 ms' : '',
          pass,
        ),
      );
    }
  }
  if (s.rooms.length > 0) {
    rows.push(
      row(
        'Room deliveries per second',
        0,
        med(s.rooms, (r) => r.deliveriesPerSec),
        med(c.rooms, (r) => r.deliveriesPerSec),
        'ratio ≥ 0.40',
        (_, q) => q !== null && q >= 0.4,
      ),
    );
    rows.push(
      row(
        'Room messages per second',
        0,
        med(s.rooms, (r) => r.throughput),
        med(c.rooms, (r) => r.throughput),
      ),
    );
    for (const p of ['p50', 'p95', 'p99'] as const)
      rows.push(
        row(
          `Room delivery latency, ${p} (ms)`,
          2,
          med(s.rooms, (r) => r.latency[p]),
          med(c.rooms, (r) => r.latency[p]),
        ),
      );
    rows.push(
      row(
        'Server CPU per 1,000 room deliveries (ms)',
        1,
        med(s.rooms, (r) => r.cpuMsPer1000Deliveries),
        med(c.rooms, (r) => r.cpuMsPer1000Deliveries),
      ),
    );
    rows.push(row('Load generator CPU during rooms (% of one core)', 0, med(s.rooms, genShare), med(c.rooms, genShare)));
  }
  if (s.idle.length > 0) {
    const n = s.idle[0]!.streams;
    rows.push(
      row(
        `Idle streams: RSS per stream at ${n} (KiB)`,
        1,
        med(s.idle, (r) => r.bytesPerStream / 1024),
        med(c.idle, (r) => r.bytesPerStream / 1024),
        'ratio ≤ 1.5 at 10,000',
        n >= 10_000 ? (_, q) => q !== null && q <= 1.5 : undefined,
      ),
    );
  }
  if (s.replay.length > 0) {
    const full = o.replayCount >= 10_000;
    rows.push(
      row(
        `Replay of ${o.replayCount} envelopes to ready (ms)`,
        0,
        med(s.replay, (r) => r.toReadyMs),
        null,
        '≤ 1,000 ms for 10,000',
        full ? (v) => v <= 1000 : undefined,
      ),
    );
    rows.push(
      row(
        `Ack of ${o.replayCount} in batches of 500 (ms)`,
        0,
        med(s.replay, (r) => r.ackMs),
        null,
      ),
    );
  }
  return rows;
}

const fmt = (v: number | null, digits: number): string =>
  v === null || !Number.isFinite(v) ? '–' : v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

export function markdownTable(rows: Row[]): string {
  const out = ['| Figure | Service | Ceiling | Ratio | Target | Holds |', '|---|---:|---:|---:|---|---|'];
  for (const r of rows) {
    const pass = r.pass === null ? (r.target ? 'n/a' : '') : r.pass ? 'yes' : '**no**';
    out.push(`| ${r.metric} | ${fmt(r.service, r.digits)} | ${fmt(r.ceiling, r.digits)} | ${fmt(r.ratio, 2)} | ${r.target} | ${pass} |`);
  }
  return out.join('\n');
}

/** Anything that makes a figure doubtful: refused sends, lost deliveries, skipped paced sends, short replays. */
export function integrityNotes(name: string, runs: TargetRuns): string[] {
  const notes: string[] = [];
  const phases: [string, PhaseResult][] = [
    ...runs.dm.flatMap((r, i): [string, PhaseResult][] => [
      [`dm max #${i + 1}`, r.max],
      [`dm paced #${i + 1}`, r.paced],
      [`dm half #${i + 1}`, r.half],
    ]),
    ...runs.rooms.map((r, i): [string, PhaseResult] => [`rooms #${i + 1}`, r]),
  ];
  for (const [what, p] of phases) {
    if (p.errors) notes.push(`${name} ${what}: ${p.errors} refused sends (first: ${p.firstError})`);
    if (p.delivered < p.expected) notes.push(`${name} ${what}: ${p.expected - p.delivered} of ${p.expected} deliveries missing after the drain wait`);
    if (p.skipped) notes.push(`${name} ${what}: ${p.skipped} paced sends skipped (too many in flight: the server fell behind the schedule)`);
  }
  runs.replay.forEach((r, i) => {
    if (r.replayed !== r.queued) notes.push(`${name} replay #${i + 1}: ${r.replayed} replayed of ${r.queued} queued`);
  });
  return notes;
}
