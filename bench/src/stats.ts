/** Percentiles from all samples, medians of repeated runs, and the delivery-latency recorder. */

/** The p-th percentile (0..100) by nearest rank over a sorted copy; NaN for no samples. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export function median(xs: number[]): number {
  const v = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const mid = v.length >> 1;
  return v.length % 2 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
}

export interface Latency {
  samples: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  /** With `--tails`: when the deliveries at or above the p99 were sent (see `Tails`). */
  tails?: Tails;
}

/**
 * Where in a phase its slowest deliveries (at or above the p99) were sent: counts per 100 ms of
 * send time from the phase's first send, and that send's wall-clock time, to set beside the
 * service's own logs (`--trace-gc` of a process, say). A stall shows as one or two windows
 * holding most of them; load that is merely high spreads them over the phase.
 */
export interface Tails {
  firstSendEpochMs: number;
  per100ms: Record<number, number>;
}

/** Set from `--tails` before any phase runs. */
export const recording = { tails: false };

/**
 * Records, per envelope id, when its POST started, and for each `msg` event at a target device
 * the time since then. Deliveries of envelopes sent outside the measured window are counted
 * apart and never become samples.
 */
export class Recorder {
  private readonly sentAt = new Map<string, number>();
  private samples = new Float64Array(1 << 16);
  private n = 0;
  /** Send time of each sample, kept only with `--tails`. */
  private readonly sentTimes: number[] | null = recording.tails ? [] : null;
  delivered = 0;
  unmatched = 0;

  /** Notes the start of a POST (performance.now()) for an envelope id that counts. */
  sent(id: string, at: number): void {
    this.sentAt.set(id, at);
  }

  readonly onMsg = (id: string, at: number): void => {
    const t0 = this.sentAt.get(id);
    if (t0 === undefined) {
      this.unmatched++;
      return;
    }
    this.delivered++;
    if (this.n === this.samples.length) {
      const bigger = new Float64Array(this.samples.length * 2);
      bigger.set(this.samples);
      this.samples = bigger;
    }
    this.samples[this.n++] = at - t0;
    this.sentTimes?.push(t0);
  };

  latency(): Latency {
    const sorted = this.samples.slice(0, this.n).sort();
    const p99 = percentile(sorted, 99);
    return {
      samples: this.n,
      p50: percentile(sorted, 50),
      p95: percentile(sorted, 95),
      p99,
      max: sorted.length ? sorted[sorted.length - 1]! : NaN,
      ...(this.sentTimes && this.n > 0 ? { tails: this.tails(p99, this.sentTimes) } : {}),
    };
  }

  private tails(p99: number, sentTimes: number[]): Tails {
    let first = Infinity;
    for (const t of sentTimes) first = Math.min(first, t);
    const per100ms: Record<number, number> = {};
    for (let i = 0; i < this.n; i++) {
      if (this.samples[i]! < p99) continue;
      const w = Math.floor((sentTimes[i]! - first) / 100);
      per100ms[w] = (per100ms[w] ?? 0) + 1;
    }
    return { firstSendEpochMs: Math.round(performance.timeOrigin + first), per100ms };
  }

  /** Waits until `expected` deliveries arrived or `timeoutMs` passed; returns the count. */
  async drain(expected: number, timeoutMs: number): Promise<number> {
    const deadline = performance.now() + timeoutMs;
    while (this.delivered < expected && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    return this.delivered;
  }
}
