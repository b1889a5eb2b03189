import type { ContenderId } from './contenders/contender.js';
import type { MachineInfo } from './machine.js';
import { type Measurement, ratesOf } from './stats.js';
import type { Workload } from './workloads.js';

/** One target of the issue, evaluated. */
export interface TargetResult {
  readonly label: string;
  readonly value: string;
  readonly target: string;
  readonly met: boolean;
}

const fixed = (value: number, digits: number): string => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');

/** The results table, markdown-friendly. */
export function formatTable(measurements: readonly Measurement[]): string {
  const header = ['workload', 'contender', 'acquisitions/s', 'busy/s', 'retries/s', 'p50 ms', 'p99 ms'];
  const rows = measurements.map((m) => {
    const r = ratesOf(m);
    return [
      m.workload,
      m.contender,
      fixed(r.acquisitionsPerSecond, 0),
      fixed(r.busyPerSecond, 0),
      fixed(r.retriesPerSecond, 0),
      fixed(r.p50Ms, 3),
      fixed(r.p99Ms, 3),
    ];
  });
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    `| ${cells.map((cell, column) => (column < 2 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0))).join(' | ')} |`;
  const rule = `|${widths.map((width, column) => (column < 2 ? `${'-'.repeat(width + 1)}-` : `${'-'.repeat(width + 1)}:`)).join('|')}|`;
  return [line(header), rule, ...rows.map(line)].join('\n');
}

function find(measurements: readonly Measurement[], workload: string, id: ContenderId): Measurement | undefined {
  return measurements.find((m) => m.workload === workload && m.contenderId === id);
}

function ratio(label: string, over: Measurement | undefined, under: Measurement | undefined, min: number): TargetResult {
  const value = over && under ? ratesOf(over).acquisitionsPerSecond / ratesOf(under).acquisitionsPerSecond : Number.NaN;
  return { label, value: `${fixed(value, 3)} x`, target: `>= ${min.toFixed(2)} x`, met: value >= min };
}

function retryShare(label: string, library: Measurement | undefined, max: number): TargetResult {
  const attempts = library ? library.granted + library.busy : 0;
  const share = library && attempts > 0 ? library.retries / attempts : Number.NaN;
  return { label, value: `${fixed(share * 100, 3)} %`, target: `<= ${max * 100} %`, met: share <= max };
}

/** The issue's targets, evaluated on the measurements. */
export function evaluateTargets(measurements: readonly Measurement[]): TargetResult[] {
  const library = (w: string): Measurement | undefined => find(measurements, w, 'library');
  return [
    ratio('W1 library / durable floor (sync delete)', library('W1'), find(measurements, 'W1', 'floor-sync'), 0.9),
    ratio('W2 library / pg advisory locks', library('W2'), find(measurements, 'W2', 'advisory'), 0.6),
    ratio('W2 library / seed algorithm', library('W2'), find(measurements, 'W2', 'seed'), 4),
    retryShare('W1 library retries / attempts', library('W1'), 0.01),
    retryShare('W2 library retries / attempts', library('W2'), 0.01),
  ];
}

/** Ratios shown for transparency only (no target). */
export function informativeRatios(measurements: readonly Measurement[]): string[] {
  const lines: string[] = [];
  for (const workload of ['W1', 'W2']) {
    const library = find(measurements, workload, 'library');
    for (const id of ['floor-sync', 'floor-async', 'advisory', 'seed'] as const) {
      const other = find(measurements, workload, id);
      if (!library || !other) continue;
      const value = ratesOf(library).acquisitionsPerSecond / ratesOf(other).acquisitionsPerSecond;
      lines.push(`${workload} library / ${other.contender}: ${fixed(value, 3)} x`);
    }
  }
  return lines;
}

export function formatTargets(results: readonly TargetResult[]): string {
  const width = Math.max(...results.map((r) => r.label.length));
  return results
    .map((r) => `${r.label.padEnd(width)}  ${r.value.padStart(10)}  (target ${r.target})  ${r.met ? 'PASS' : 'MISSED'}`)
    .join('\n');
}

export function formatMachine(machine: MachineInfo, workloads: readonly Workload[], seconds: number): string {
  return [
    `CPU:        ${machine.cpuModel}, ${machine.cores} cores, ${machine.memoryGiB} GiB RAM`,
    `Node:       ${machine.node}`,
    `PostgreSQL: ${machine.postgres} — ${machine.database}`,
    `Durability: ${machine.durability}`,
    `Timing:     1 s warm-up + ${seconds} s measured per row; tables vacuumed between rows`,
    ...workloads.map((w) => `${w.id}:         ${w.description}`),
  ].join('\n');
}
