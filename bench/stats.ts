import type { WorkflowShape } from './workflow-shape';
/** Latency summaries: medians and tails over samples in milliseconds. */
export interface LatencySummary {
  n: number;
  p50: number;
  p95: number;
  p99: number;
  mean: number;
  min: number;
  max: number;
}

/** Linear interpolation between closest ranks (the usual "type 7" quantile). */
function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

export function summarize(samples: number[]): LatencySummary {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = sorted.reduce((s, x) => s + x, 0) / Math.max(1, sorted.length);
  return {
    n: sorted.length,
    p50: round(quantile(sorted, 0.5)),
    p95: round(quantile(sorted, 0.95)),
    p99: round(quantile(sorted, 0.99)),
    mean: round(mean),
    min: round(sorted[0] ?? NaN),
    max: round(sorted[sorted.length - 1] ?? NaN),
  };
}

export const median = (samples: number[]): number =>
  quantile(
    [...samples].sort((a, b) => a - b),
    0.5,
  );

export function ratio(numerator: number, denominator: number): number {
  return denominator > 0 && Number.isFinite(numerator) ? round(numerator / denominator, 3) : NaN;
}

export function round(x: number, digits = 2): number {
  if (!Number.isFinite(x)) return x;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** The index of the sample closest to the median: the launch whose history we profile. */
export function indexNearest(samples: number[], value: number): number {
  let best = 0;
  for (let i = 1; i < samples.length; i++)
    if (Math.abs(samples[i]! - value) < Math.abs(samples[best]! - value)) best = i;
  return best;
}

export const elapsedMs = (start: number): number => performance.now() - start;

/** Medians per named part over many calls (each call a record of part → milliseconds). */
export function medianParts(calls: Record<string, number>[]): Record<string, number> {
  const names = [...new Set(calls.flatMap((c) => Object.keys(c)))];
  return Object.fromEntries(names.map((n) => [n, round(median(calls.map((c) => c[n] ?? 0)))]));
}

/** A product-versus-floor comparison of one kind of launch, as the attach and materialize scenarios report it. */
export interface LaunchComparison {
  product: LatencySummary;
  floor: LatencySummary;
  /** Median milliseconds of the floor's parts (sql, git, fs, spawn). */
  floorParts: Record<string, number>;
  ratioP50: number;
  /** Milliseconds of CPU per launch, by process group. */
  cpuPerLaunchMs: { product: Record<string, number>; floor: Record<string, number> };
  failures: number;
  failureCodes: Record<string, number>;
  samplesMs: { product: number[]; floor: number[]; engine?: number[] };
  /** Temporal's own cost for a workflow of the product's shape with no work (bench/engine-floor.ts), interleaved. */
  engine?: LatencySummary;
  engineShape?: WorkflowShape;
  /** product p50 / (bare floor p50 + engine floor p50): what a launch's target judges. */
  ratioToFloorsP50?: number;
}
