import { percentile } from './stats.js';

/** The median and the 99th percentile of a set of latencies, in ms. */
export interface Latency {
  readonly medianMs: number;
  readonly p99Ms: number;
}

/** The median and p99 of `values` (ms; unsorted). */
export function latencyOf(values: readonly number[]): Latency {
  const sorted = [...values].sort((a, b) => a - b);
  return { medianMs: percentile(sorted, 50), p99Ms: percentile(sorted, 99) };
}

/** A markdown row of a latency table: a name, its median and its p99. */
export function latencyRow(name: string, latency: Latency): string {
  return `| ${name.padEnd(52)} | ${latency.medianMs.toFixed(2).padStart(9)} | ${latency.p99Ms.toFixed(2).padStart(6)} |`;
}

/** The head of a latency table whose rows are measured "from `from`". */
export function latencyHead(from: string): string[] {
  return [`| ${from.padEnd(52)} | median ms | p99 ms |`, `|${'-'.repeat(54)}|----------:|-------:|`];
}
