// One seeded generator for the tests, the storage suites and the benchmarks that draw random plans, edits or bytes:
// a failure names its seed, and the same seed replays the same history.

/** Numbers in [0, 1) from a 32-bit seed (mulberry32): small, fast and well spread for test data. */
export function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
