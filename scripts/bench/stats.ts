// Pure statistics for the benchmark: medians across repetitions, percentiles of latency samples, ratios.

/** The median of the values (mean of the two middle ones for an even count); NaN for none. */
export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/**
 * The p-th percentile (0..100) by linear interpolation between closest ranks, as numpy's default: p50 of an even
 * count is the mean of the two middle values, p0 the minimum, p100 the maximum. NaN for no values.
 */
export function percentile(values: readonly number[], p: number): number {
  if (p < 0 || p > 100) throw new RangeError(`percentile must be within 0..100, got ${p}`);
  const finite = values.filter((value) => Number.isFinite(value));
  if (finite.length === 0) return Number.NaN;
  const sorted = [...finite].sort((a, b) => a - b);
  const rank = (p / 100) * (sorted.length - 1);
  const low = Math.floor(rank);
  const high = Math.ceil(rank);
  const lowValue = sorted[low] as number;
  const highValue = sorted[high] as number;
  return lowValue + (highValue - lowValue) * (rank - low);
}

/** a / b, or NaN when either is not a finite number or b is 0. */
export function ratio(a: number, b: number): number {
  if (!Number.isFinite(a) || !Number.isFinite(b) || b === 0) return Number.NaN;
  return a / b;
}

/** Operations per second for `count` operations in `elapsedMs`. */
export function perSecond(count: number, elapsedMs: number): number {
  return elapsedMs > 0 ? (count * 1000) / elapsedMs : Number.NaN;
}

/** Summary of one side's latency samples: p50 and p99 in ms. */
export interface LatencySummary {
  p50: number;
  p99: number;
  samples: number;
  /** p50 of the first step alone (the create: tools/call, or queue.add), ms. */
  createP50?: number;
}

export function summarizeLatency(samplesMs: readonly number[]): LatencySummary {
  return { p50: percentile(samplesMs, 50), p99: percentile(samplesMs, 99), samples: samplesMs.length };
}

/** Per-key difference of two counter snapshots (keys missing before count from 0); zero and negative deltas dropped. */
export function counterDelta(
  before: Readonly<Record<string, number>>,
  after: Readonly<Record<string, number>>,
): Record<string, number> {
  const delta: Record<string, number> = {};
  for (const [key, value] of Object.entries(after)) {
    const change = value - (before[key] ?? 0);
    if (change > 0) delta[key] = change;
  }
  return delta;
}

export function sum(values: Iterable<number>): number {
  let total = 0;
  for (const value of values) total += value;
  return total;
}
