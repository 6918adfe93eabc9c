/**
 * Milliseconds on a monotonic clock, to measure spans of time with. Not `performance.now()`:
 * the first use of Node's `performance` loads `perf_hooks` and ten internal modules with it, a
 * cost every table fill would pay at start.
 */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}
