/**
 * From the repetitions of a run to the table: every figure is the median over the repetitions,
 * next to the ceiling's figure of the same run and their ratio, and the targets of the run's
 * backend (goals.ts) with pass or fail.
 */
import type { IdleRun } from './workloads/idle.js';
import type { DmRun } from './workloads/dm.js';
import { per1000, type PhaseResult } from './workloads/phase.js';
import type { ReplayRun } from './workloads/replay.js';
import { median } from './stats.js';
import { GOALS, msAtMost, num, ratioAtLeast, ratioAtMost, type Goal, type Goals } from './goals.js';

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

function row(metric: string, digits: number, service: number, ceiling: number | null, goal?: Goal): Row {
  const ratio = ceiling === null || !Number.isFinite(ceiling) || ceiling === 0 ? null : service / ceiling;
  const measured = Number.isFinite(service);
  return { metric, service, ceiling, ratio, target: goal?.text ?? '', pass: goal?.holds && measured ? goal.holds(service, ratio) : null, digits };
}

const PERCENTILES = ['p50', 'p95', 'p99'] as const;

/** Latency rows of one kind of phase; the p99 row carries the goal. */
function latencyRows(metric: (p: string) => string, s: PhaseResult[], c: PhaseResult[], p99Goal?: Goal): Row[] {
  return PERCENTILES.map((p) =>
    row(
      metric(p),
      2,
      med(s, (r) => r.latency[p]),
      med(c, (r) => r.latency[p]),
      p === 'p99' ? p99Goal : undefined,
    ),
  );
}

/** PostgreSQL's and Redis's CPU per 1,000 deliveries beside the service's (--backend postgres only); no ceiling figure. */
function storeCpuRows(what: string, phases: PhaseResult[]): Row[] {
  if (phases[0]?.postgresCpuMs === undefined) return [];
  const pgMs = (p: PhaseResult) => per1000(p.postgresCpuMs ?? NaN, p);
  const redisMs = (p: PhaseResult) => per1000(p.redisCpuMs ?? NaN, p);
  return [
    row(`PostgreSQL CPU per 1,000 ${what} deliveries (ms)`, 1, med(phases, pgMs), null),
    row(`Redis CPU per 1,000 ${what} deliveries (ms)`, 1, med(phases, redisMs), null),
    row(
      `Service + PostgreSQL + Redis CPU per 1,000 ${what} deliveries (ms)`,
      1,
      med(phases, (p) => p.cpuMsPer1000Deliveries + pgMs(p) + redisMs(p)),
      null,
    ),
  ];
}

function dmRows(s: DmRun[], c: DmRun[], g: Goals, o: SummaryOptions): Row[] {
  const max = (r: DmRun) => r.max;
  const sysShare = (r: DmRun) => (100 * r.max.serverSystemMs) / r.max.serverCpuMs;
  const throughput = med(s, (r) => r.max.throughput);
  const rows = [
    row(
      'DM throughput, closed loop (msg/s)',
      0,
      throughput,
      med(c, (r) => r.max.throughput),
      ratioAtLeast(g.dmRatio),
    ),
  ];
  if (o.instances > 1 && g.instancesRatio !== null)
    rows.push(
      row(`DM throughput with ${o.instances} instances (msg/s)`, 0, throughput, null, {
        text: `≥ ${num(g.instancesRatio)} × a run with --instances 1 (by hand)`,
      }),
    );
  rows.push(
    ...latencyRows((p) => `DM latency at full load, ${p} (ms)`, s.map(max), c.map(max)),
    row(
      'Server CPU per 1,000 DM deliveries (ms)',
      1,
      med(s, (r) => r.max.cpuMsPer1000Deliveries),
      med(c, (r) => r.max.cpuMsPer1000Deliveries),
      ratioAtMost(g.cpuRatio),
    ),
    ...storeCpuRows('DM', s.map(max)),
    row('… of which kernel (system) time (%)', 0, med(s, sysShare), med(c, sysShare)),
    row(
      'Load generator CPU during DM max (% of one core)',
      0,
      med(s, (r) => genShare(r.max)),
      med(c, (r) => genShare(r.max)),
    ),
    ...latencyRows(
      (p) => `DM latency paced at ${o.pacedRate}/s, ${p} (ms)`,
      s.map((r) => r.paced),
      c.map((r) => r.paced),
      // The target is for the default rate; another (`--rate`) is measured without one.
      o.pacedRate === 2000 ? msAtMost(g.pacedP99Ms) : undefined,
    ),
    row(
      'DM half-max pacing rate (msg/s)',
      0,
      med(s, (r) => r.half.rate ?? NaN),
      med(c, (r) => r.half.rate ?? NaN),
    ),
    ...latencyRows(
      (p) => `DM latency paced at ½ max, ${p} (ms)`,
      s.map((r) => r.half),
      c.map((r) => r.half),
      msAtMost(g.halfP99Ms),
    ),
  );
  return rows;
}

function roomRows(s: PhaseResult[], c: PhaseResult[], g: Goals): Row[] {
  return [
    row(
      'Room deliveries per second',
      0,
      med(s, (r) => r.deliveriesPerSec),
      med(c, (r) => r.deliveriesPerSec),
      ratioAtLeast(g.roomsRatio),
    ),
    row(
      'Room messages per second',
      0,
      med(s, (r) => r.throughput),
      med(c, (r) => r.throughput),
    ),
    ...latencyRows((p) => `Room delivery latency, ${p} (ms)`, s, c),
    row(
      'Server CPU per 1,000 room deliveries (ms)',
      1,
      med(s, (r) => r.cpuMsPer1000Deliveries),
      med(c, (r) => r.cpuMsPer1000Deliveries),
    ),
    ...storeCpuRows('room', s),
    row('Load generator CPU during rooms (% of one core)', 0, med(s, genShare), med(c, genShare)),
  ];
}

function replayRows(s: ReplayRun[], g: Goals, o: SummaryOptions): Row[] {
  return [
    row(
      `Replay of ${o.replayCount} envelopes to ready (ms)`,
      0,
      med(s, (r) => r.toReadyMs),
      null,
      msAtMost(g.replayMs, ' for 10,000', o.replayCount >= 10_000),
    ),
    row(
      `Ack of ${o.replayCount} in batches of 500 (ms)`,
      0,
      med(s, (r) => r.ackMs),
      null,
    ),
    row(
      `Queue ${o.offlineCount} envelopes for an offline device (ms)`,
      0,
      med(s, (r) => r.offlineMs),
      null,
      msAtMost(g.offlineMs, ' for 5,000', o.offlineCount === 5000),
    ),
    row(
      '… service CPU during it, all threads (ms)',
      0,
      med(s, (r) => r.offlineCpuMs),
      null,
    ),
  ];
}

export interface SummaryOptions {
  backend: 'sqlite' | 'postgres';
  instances: number;
  pacedRate: number;
  replayCount: number;
  offlineCount: number;
}

export function summaryRows(s: TargetRuns, c: TargetRuns, o: SummaryOptions): Row[] {
  const g = GOALS[o.backend];
  // No ratio: the ceiling is always one process.
  const rows: Row[] = [
    { metric: 'Server processes (--instances)', service: o.instances, ceiling: 1, ratio: null, target: '', pass: null, digits: 0 },
  ];
  if (s.dm.length > 0) rows.push(...dmRows(s.dm, c.dm, g, o));
  if (s.rooms.length > 0) rows.push(...roomRows(s.rooms, c.rooms, g));
  if (s.idle.length > 0) {
    const n = s.idle[0]!.streams;
    const perStream = (r: IdleRun) => r.bytesPerStream / 1024;
    rows.push(
      row(
        `Idle streams: RSS per stream at ${n} (KiB)`,
        1,
        med(s.idle, perStream),
        med(c.idle, perStream),
        ratioAtMost(g.idleRatio, ' at 10,000', n >= 10_000),
      ),
    );
  }
  if (s.replay.length > 0) rows.push(...replayRows(s.replay, g, o));
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
