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
}

/**
 * Records, per envelope id, when its POST started, and for each `msg` event at a target device
 * the time since then. Deliveries of envelopes sent outside the measured window are counted
 * apart and never become samples.
 */
export class Recorder {
  private readonly sentAt = new Map<string, number>();
  private samples = new Float64Array(1 << 16);
  private n = 0;
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
  };

  latency(): Latency {
    const sorted = this.samples.slice(0, this.n).sort();
    return {
      samples: this.n,
      p50: percentile(sorted, 50),
      p95: percentile(sorted, 95),
      p99: percentile(sorted, 99),
      max: sorted.length ? sorted[sorted.length - 1]! : NaN,
    };
  }

  /** Waits until `expected` deliveries arrived or `timeoutMs` passed; returns the count. */
  async drain(expected: number, timeoutMs: number): Promise<number> {
    const deadline = performance.now() + timeoutMs;
    while (this.delivered < expected && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    return this.delivered;
  }
}
