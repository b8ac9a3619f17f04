// Timing helpers shared by the benchmarks: warm up, repeat, and summarise samples as median and p99.
// Platform-neutral (the global `performance`), so the browser run can use them too.
import { seeded } from '../../packages/core/src/testing/seeded.js';

export interface Summary {
  /** Number of samples. */
  n: number;
  median: number;
  p99: number;
  min: number;
  max: number;
  mean: number;
}

export function summarize(samples: readonly number[]): Summary {
  if (samples.length === 0) throw new Error('no samples');
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
  const sum = sorted.reduce((s, x) => s + x, 0);
  return {
    n: sorted.length,
    median: sorted.length % 2 ? sorted[(sorted.length - 1) / 2]! : (at(0.5) + sorted[sorted.length / 2]!) / 2,
    p99: at(0.99),
    min: sorted[0]!,
    max: sorted[sorted.length - 1]!,
    mean: sum / sorted.length,
  };
}

export function now(): number {
  return performance.now();
}

/**
 * Times `fn` `runs` times after `warmup` untimed runs. `setup` runs before each call, untimed (e.g. the edit
 * that makes the next read uncached). Returns milliseconds per call.
 */
export function sample(
  fn: () => unknown,
  options: { runs: number; warmup?: number; setup?: (i: number) => void },
): number[] {
  const { runs, warmup = Math.min(5, runs), setup } = options;
  const out: number[] = [];
  for (let i = 0; i < warmup + runs; i++) {
    setup?.(i);
    const t0 = performance.now();
    fn();
    const dt = performance.now() - t0;
    if (i >= warmup) out.push(dt);
  }
  return out;
}

export async function sampleAsync(
  fn: () => Promise<unknown>,
  options: { runs: number; warmup?: number; setup?: (i: number) => void | Promise<void> },
): Promise<number[]> {
  const { runs, warmup = Math.min(5, runs), setup } = options;
  const out: number[] = [];
  for (let i = 0; i < warmup + runs; i++) {
    await setup?.(i);
    const t0 = performance.now();
    await fn();
    const dt = performance.now() - t0;
    if (i >= warmup) out.push(dt);
  }
  return out;
}

/** A seeded PRNG, so every run builds the same plans and the same call sequences. */
export const rng = seeded;

/** Runs the garbage collector when node was started with --expose-gc, so one phase's garbage is not the next's. */
export function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

const started = now();
/** A progress line on stderr (with seconds since start), so a long run shows where it is. */
export function progress(message: string): void {
  if (typeof process !== 'undefined' && process.stderr)
    process.stderr.write(`   [${((now() - started) / 1000).toFixed(1)} s] ${message}\n`);
}

/** The 5th and 95th percentiles of quantile(a) / quantile(b) over `draws` bootstrap resamples of each. */
export function bootstrapRatio(
  a: number[],
  b: number[],
  q: number,
  draws = 1_000,
): { low: number; high: number } {
  const random = rng(7);
  const resampledQuantile = (xs: number[]) => {
    const sample = Float64Array.from({ length: xs.length }, () => xs[Math.floor(random() * xs.length)]!);
    sample.sort();
    return sample[Math.min(sample.length - 1, Math.ceil(q * sample.length) - 1)]!;
  };
  const ratios = Array.from({ length: draws }, () => resampledQuantile(a) / resampledQuantile(b)).sort(
    (x, y) => x - y,
  );
  return { low: ratios[Math.floor(0.05 * draws)]!, high: ratios[Math.floor(0.95 * draws)]! };
}
