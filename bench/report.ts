import type { ContenderId } from './contenders/contender.js';
import type { MachineInfo } from './machine.js';
import { type Measurement, ratesOf, type Spread, spreadOf } from './stats.js';
import type { Workload } from './workloads.js';

/** How a run measures: `rounds` interleaved rounds per workload, `sliceSeconds` measured per contender per round. */
export interface BenchPlan {
  /** Measured seconds per row (contender x workload), over all rounds. */
  readonly seconds: number;
  readonly rounds: number;
  readonly sliceSeconds: number;
  readonly warmupMs: number;
  /** False once the server refused a CHECKPOINT (role without the privilege). */
  checkpoints: boolean;
}

/** One target of the issue, evaluated. */
export interface TargetResult {
  readonly label: string;
  /** The judged value: median of the per-round ratios, or the retry share over all rounds. */
  readonly value: string;
  readonly target: string;
  readonly met: boolean;
  /** Per-round spread and aggregate, for the reader. */
  readonly detail: string;
}

const fixed = (value: number, digits: number): string => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');

/** The results table, markdown-friendly; rates over all rounds, percentiles over every sample. */
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

/** The measurement of contender `id` on `workload`. */
export function find(measurements: readonly Measurement[], workload: string, id: ContenderId): Measurement | undefined {
  return measurements.find((m) => m.workload === workload && m.contenderId === id);
}

/** Acquisitions/s of `over` divided by those of `under`: over all rounds, and round by round. */
interface RatioOf {
  readonly aggregate: number;
  readonly perRound: Spread;
}

function ratioOf(over: Measurement | undefined, under: Measurement | undefined): RatioOf {
  if (!over || !under) return { aggregate: Number.NaN, perRound: spreadOf([]) };
  const perRound = over.rounds.map((round) => {
    const other = under.rounds.find((r) => r.round === round.round);
    return other ? ratesOf(round).acquisitionsPerSecond / ratesOf(other).acquisitionsPerSecond : Number.NaN;
  });
  return {
    aggregate: ratesOf(over).acquisitionsPerSecond / ratesOf(under).acquisitionsPerSecond,
    perRound: spreadOf(perRound),
  };
}

const range = (spread: Spread, digits: number): string => `${fixed(spread.min, digits)}–${fixed(spread.max, digits)}`;

/** A target on the median of the per-round ratios of acquisitions/s of `over` to `under`: at least `min`. */
export function ratio(label: string, over: Measurement | undefined, under: Measurement | undefined, min: number): TargetResult {
  const { aggregate, perRound } = ratioOf(over, under);
  return {
    label,
    value: `${fixed(perRound.median, 3)} x`,
    target: `>= ${min.toFixed(2)} x`,
    met: perRound.median >= min,
    detail: `rounds ${range(perRound, 3)}, aggregate ${fixed(aggregate, 3)} x`,
  };
}

/** A target on the library's retries per attempt over all rounds: at most `max`. */
export function retryShare(label: string, library: Measurement | undefined, max: number): TargetResult {
  const share = (retries: number, attempts: number): number => (attempts > 0 ? retries / attempts : Number.NaN);
  const total = library ? share(library.retries, library.granted + library.busy) : Number.NaN;
  const perRound = spreadOf(library?.rounds.map((r) => share(r.retries, r.granted + r.busy)) ?? []);
  return {
    label,
    value: `${fixed(total * 100, 3)} %`,
    target: `<= ${max * 100} %`,
    met: total <= max,
    detail: `rounds ${range({ ...perRound, min: perRound.min * 100, max: perRound.max * 100 }, 3)} %`,
  };
}

/** The issue's targets, evaluated on the measurements: ratios on the median of their per-round values. */
export function evaluateTargets(measurements: readonly Measurement[]): TargetResult[] {
  const library = (w: string): Measurement | undefined => find(measurements, w, 'library');
  return [
    // W1 is judged against the grant's own two durable rows as bare SQL (issue 30): the one-row floor cannot be
    // reached by a lock that commits a lock row and a leased log row; its ratio stays in the informative lines.
    ratio('W1 library / bare SQL: lock row + log row', library('W1'), find(measurements, 'W1', 'rows-lock-log'), 0.95),
    ratio('W3 library / durable floor (async delete)', library('W3'), find(measurements, 'W3', 'floor-async'), 1),
    ratio('W2 library / pg advisory locks', library('W2'), find(measurements, 'W2', 'advisory'), 0.6),
    ratio('W2 library / seed algorithm', library('W2'), find(measurements, 'W2', 'seed'), 4),
    retryShare('W1 library retries / attempts', library('W1'), 0.01),
    ...['W1', 'W2', 'W3'].flatMap((w) => {
      const baseline = find(measurements, w, 'library-baseline');
      // With BENCH_BASELINE: the code before a change, in the same rounds; the change may cost at most 3 %.
      return baseline ? [ratio(`${w} library / ${baseline.contender}`, library(w), baseline, 0.97)] : [];
    }),
    retryShare('W2 library retries / attempts', library('W2'), 0.01),
  ];
}

/** Ratios shown for transparency only (no target). */
export function informativeRatios(measurements: readonly Measurement[]): string[] {
  const lines: string[] = [];
  for (const workload of ['W1', 'W2', 'W3']) {
    const library = find(measurements, workload, 'library');
    for (const id of ['floor-sync', 'floor-async', 'rows-lock', 'advisory', 'seed'] as const) {
      const other = find(measurements, workload, id);
      if (!library || !other) continue;
      const { aggregate, perRound } = ratioOf(library, other);
      lines.push(
        `${workload} library / ${other.contender}: ${fixed(aggregate, 3)} x ` +
          `(rounds: median ${fixed(perRound.median, 3)}, ${range(perRound, 3)})`,
      );
    }
  }
  return lines;
}

export function targetsHeader(plan: BenchPlan): string {
  return (
    `Targets (ratios judged on the median of the ${plan.rounds} per-round ratios, ` +
    'retry shares on the totals over all rounds):'
  );
}

export function formatTargets(results: readonly TargetResult[]): string {
  const width = Math.max(...results.map((r) => r.label.length));
  const targetWidth = Math.max(...results.map((r) => r.target.length));
  return results
    .map(
      (r) =>
        `${r.label.padEnd(width)}  ${r.value.padStart(10)}  (target ${r.target})${' '.repeat(targetWidth - r.target.length)}` +
        `  ${(r.met ? 'PASS' : 'MISSED').padEnd(6)}  ${r.detail}`,
    )
    .join('\n');
}

const seconds = (value: number): string => `${Number(value.toFixed(3))} s`;

export function formatMachine(machine: MachineInfo, workloads: readonly Workload[], plan: BenchPlan): string {
  const hygiene = plan.checkpoints
    ? 'VACUUM and CHECKPOINT before every slice'
    : 'VACUUM before every slice (CHECKPOINT not permitted)';
  return [
    `CPU:        ${machine.cpuModel}, ${machine.cores} cores, ${machine.memoryGiB} GiB RAM`,
    `Node:       ${machine.node}`,
    `PostgreSQL: ${machine.postgres} — ${machine.database}`,
    `Durability: ${machine.durability}`,
    `Timing:     ${plan.rounds} interleaved rounds per workload, order rotated each round; per round each contender ` +
      `${plan.warmupMs} ms warm-up + ${seconds(plan.sliceSeconds)} measured (${seconds(plan.seconds)} per row); ${hygiene}`,
    ...workloads.map((w) => `${w.id}:         ${w.description}`),
  ].join('\n');
}

/**
 * The cost of metrics on the hot path: W1 acquisitions/s with telemetry on and the metrics SDK registered (no
 * TracerProvider) over telemetry off.
 */
export function telemetryTarget(measurements: readonly Measurement[]): TargetResult {
  return ratio(
    'W1 metrics on + SDK / telemetry off',
    find(measurements, 'W1', 'library-metrics-only'),
    find(measurements, 'W1', 'library-telemetry-off'),
    0.9,
  );
}

/** What recording costs by itself: µs of one grant + release's metrics and spans, measured apart (`recordingCost`). */
export interface RecordingCost {
  readonly microsPerCall: number;
  readonly calls: number;
}

/** The telemetry rows, their throughput ratio (the target), and the recording cost against a grant + release. */
export function formatTelemetry(measurements: readonly Measurement[], target: TargetResult, cost: RecordingCost): string[] {
  const off = find(measurements, 'W1', 'library-telemetry-off');
  const microsPerGrant = off ? 1e6 / ratesOf(off).acquisitionsPerSecond : Number.NaN;
  return [
    'Telemetry (W1; on = OpenTelemetry SDK registered: metrics read every second, every span sampled and batched):',
    '',
    formatTable(measurements),
    '',
    formatTargets([target]),
    ...informativeTelemetryRatio(measurements),
    `Recording alone (the metrics and spans of one grant + release into the same SDK, no database, ${cost.calls} calls): ` +
      `${fixed(cost.microsPerCall, 1)} µs, ${fixed((cost.microsPerCall / microsPerGrant) * 100, 1)} % of a grant + ` +
      `release with telemetry off (${fixed(microsPerGrant, 0)} µs at ${fixed(1e6 / microsPerGrant, 0)}/s)`,
  ];
}

/** Metrics and every span sampled over telemetry off: no target, for the reader who traces every call. */
function informativeTelemetryRatio(measurements: readonly Measurement[]): string[] {
  const { aggregate, perRound } = ratioOf(
    find(measurements, 'W1', 'library-telemetry-on'),
    find(measurements, 'W1', 'library-telemetry-off'),
  );
  if (Number.isNaN(aggregate)) return [];
  return [
    `W1 metrics + every span sampled / telemetry off: ${fixed(perRound.median, 3)} x ` +
      `(rounds ${range(perRound, 3)}, aggregate ${fixed(aggregate, 3)} x; no target)`,
  ];
}
