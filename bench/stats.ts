import type { ContenderId } from './contenders/contender.js';

/** What one contender achieved on one workload during one measured window (one slice of one round). */
export interface Sample {
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

/** One round's slice of a measurement: its counts, without the latencies. */
export interface RoundSample extends Omit<Sample, 'latencies'> {
  /** Round number, from 0. */
  readonly round: number;
  /** Position of the contender in that round's order, from 0. */
  readonly position: number;
}

/** What one contender achieved on one workload over all rounds: totals, every latency, and each round's counts. */
export interface Measurement extends Sample {
  readonly contenderId: ContenderId;
  readonly contender: string;
  readonly workload: string;
  readonly rounds: readonly RoundSample[];
}

/** Per-second rates and latency percentiles of a measurement (or of one round, without the percentiles). */
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

/** Rates over the total measured time; percentiles over every latency sample. */
export function ratesOf(m: Sample | RoundSample): Rates {
  const latencies = 'latencies' in m ? m.latencies : [];
  return {
    acquisitionsPerSecond: m.granted / m.seconds,
    busyPerSecond: m.busy / m.seconds,
    retriesPerSecond: m.retries / m.seconds,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
  };
}

/** Adds up the rounds of one contender on one workload. */
export function combineRounds(
  identity: Pick<Measurement, 'contenderId' | 'contender' | 'workload'>,
  slices: readonly (Sample & Pick<RoundSample, 'round' | 'position'>)[],
): Measurement {
  const latencies = slices.flatMap((slice) => slice.latencies).sort((a, b) => a - b);
  const sum = (key: 'seconds' | 'granted' | 'busy' | 'retries'): number =>
    slices.reduce((total, slice) => total + slice[key], 0);
  return {
    ...identity,
    seconds: sum('seconds'),
    granted: sum('granted'),
    busy: sum('busy'),
    retries: sum('retries'),
    latencies,
    rounds: slices.map(({ round, position, seconds, granted, busy, retries }) => ({
      round,
      position,
      seconds,
      granted,
      busy,
      retries,
    })),
  };
}

/** Median (mean of the two middle values for an even count), min and max; NaN when empty. */
export interface Spread {
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

export function spreadOf(values: readonly number[]): Spread {
  const sorted = values.filter((value) => !Number.isNaN(value)).sort((a, b) => a - b);
  if (sorted.length === 0) return { median: Number.NaN, min: Number.NaN, max: Number.NaN };
  const middle = Math.floor(sorted.length / 2);
  const median =
    sorted.length % 2 === 1 ? (sorted[middle] ?? Number.NaN) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
  return { median, min: sorted[0] ?? Number.NaN, max: sorted[sorted.length - 1] ?? Number.NaN };
}
