/**
 * The targets the benchmark checks, per backend (the speed issue's; docs/BENCHMARKS.md).
 * Ratios are to the ceiling of the same run; times are absolute. A target that a run cannot check
 * (not at full size, or compared between two runs by hand) is shown with "n/a".
 */

/** The targets for one backend; null: the figure is reported without one. */
export interface Goals {
  /** DM throughput (closed loop) ≥ this × the ceiling's. */
  dmRatio: number | null;
  /** Service CPU per 1,000 DM deliveries ≤ this × the ceiling's. */
  cpuRatio: number | null;
  /** p99 latency paced at `pacedRate` (2,000/s), in ms. */
  pacedP99Ms: number | null;
  /** p99 latency paced at half of the maximum, in ms. */
  halfP99Ms: number | null;
  /** Room deliveries per second ≥ this × the ceiling's. */
  roomsRatio: number | null;
  /** RSS per idle stream ≤ this × the ceiling's, at 10,000 streams. */
  idleRatio: number | null;
  /** Replay of 10,000 queued envelopes to `ready`, in ms. */
  replayMs: number | null;
  /** 5,000 envelopes stored for an offline device, in ms. */
  offlineMs: number | null;
  /** DM throughput with several instances ≥ this × with one: two runs, compared by hand. */
  instancesRatio: number | null;
}

export const GOALS: Record<'sqlite' | 'postgres', Goals> = {
  sqlite: {
    dmRatio: 0.6,
    cpuRatio: 1.5,
    pacedP99Ms: 3,
    halfP99Ms: 25,
    roomsRatio: 0.4,
    idleRatio: 1.3,
    replayMs: 1000,
    offlineMs: 500,
    instancesRatio: null,
  },
  postgres: {
    dmRatio: 0.3,
    cpuRatio: 3,
    pacedP99Ms: null,
    halfP99Ms: 25,
    roomsRatio: 0.4,
    idleRatio: null,
    replayMs: 1000,
    offlineMs: null,
    instancesRatio: 0.9,
  },
};

/** A target's text, and how to check it (absent: not checkable in this run, e.g. not at full size). */
export interface Goal {
  text: string;
  holds?: (service: number, ratio: number | null) => boolean;
}

export const num = (x: number): string => x.toLocaleString('en-US', { maximumFractionDigits: 2 });
export const ratioAtLeast = (x: number | null): Goal | undefined =>
  x === null ? undefined : { text: `ratio ≥ ${x.toFixed(2)}`, holds: (_, q) => q !== null && q >= x };
export const ratioAtMost = (x: number | null, suffix = '', checkable = true): Goal | undefined =>
  x === null
    ? undefined
    : { text: `ratio ≤ ${num(x)}${suffix}`, ...(checkable ? { holds: (_: number, q: number | null) => q !== null && q <= x } : {}) };
export const msAtMost = (x: number | null, suffix = '', checkable = true): Goal | undefined =>
  x === null ? undefined : { text: `≤ ${num(x)} ms${suffix}`, ...(checkable ? { holds: (v: number) => v <= x } : {}) };
