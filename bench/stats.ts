import type { ContenderId } from './contenders/contender.js';

/** What one contender achieved on one workload during the measured window. */
export interface Measurement {
  readonly contenderId: ContenderId;
  readonly contender: string;
  readonly workload: string;
  readonly seconds: number;
  /** Successful grants, each including its release. */
  readonly granted: number;
  /** Attempts that found a lock of the group unavailable. */
  readonly busy: number;
  /** Transactions or round trips repeated after a serialization failure or deadlock. */
  readonly retries: number;
  /** Latencies in ms of successful acquire + release, sorted ascending. */
  readonly latencies: readonly number[];
}

/** Per-second rates and latency percentiles of a measurement. */
export interface Rates {
  readonly acquisitionsPerSecond: number;
  readonly busyPerSecond: number;
  readonly retriesPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

/** Nearest-rank percentile of an ascending array; NaN when empty. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] ?? Number.NaN;
}

export function ratesOf(m: Measurement): Rates {
  return {
    acquisitionsPerSecond: m.granted / m.seconds,
    busyPerSecond: m.busy / m.seconds,
    retriesPerSecond: m.retries / m.seconds,
    p50Ms: percentile(m.latencies, 50),
    p99Ms: percentile(m.latencies, 99),
  };
}
