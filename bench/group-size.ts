// The cost of a group's size: one client takes and releases a group of k write locks on free names, for k = 1 … 32,
// in interleaved rounds (the order of the sizes rotates each round). The target is on the latency of acquire +
// release of 32 locks against 1, judged on the median of the per-round ratios of median latencies.
import { performance } from 'node:perf_hooks';
import { LockService, type LockSpec } from 'nestjs-db-locks';
import type { BenchDatabase } from './bench-database.js';
import { bootApplication } from './contenders/library.contender.js';
import type { TargetResult } from './report.js';
import { percentile, spreadOf } from './stats.js';

/** The group sizes measured. */
export const GROUP_SIZES = [1, 2, 4, 8, 16, 32] as const;

/** One size's result. */
export interface GroupSizeRow {
  readonly size: number;
  /** Median of the per-round median latencies of acquire + release, ms. */
  readonly medianMs: number;
  /** Median of the per-round ratios to the group of 1. */
  readonly ratio: number;
  readonly minRatio: number;
  readonly maxRatio: number;
}

const ROUNDS = 7;
const SLICE_MS = 1000;

/** Measures every size in `ROUNDS` interleaved rounds on one application. */
export async function measureGroupSizes(database: BenchDatabase): Promise<GroupSizeRow[]> {
  const app = await bootApplication(database.url, 'bench-groups');
  try {
    const locks = app.get(LockService);
    const groups = GROUP_SIZES.map((size) =>
      Array.from({ length: size }, (_, i) => `GROUP${size}_${i}_WRITE` as LockSpec),
    );
    const once = async (group: readonly LockSpec[]) => {
      const stamp = await locks.tryLocks(group);
      if (stamp === 0) throw new Error('group sizes: a free group was refused');
      await locks.releaseLocks(stamp);
    };
    for (const group of groups) for (let i = 0; i < 50; i++) await once(group); // warm-up: plans, pages, JIT
    const medians: number[][] = GROUP_SIZES.map(() => []);
    for (let round = 0; round < ROUNDS; round++) {
      for (let position = 0; position < groups.length; position++) {
        const index = (round + position) % groups.length;
        const group = groups[index] ?? [];
        await database.vacuum();
        const latencies: number[] = [];
        const end = performance.now() + SLICE_MS;
        while (performance.now() < end) {
          const t0 = performance.now();
          await once(group);
          latencies.push(performance.now() - t0);
        }
        medians[index]?.push(percentile(latencies.sort((a, b) => a - b), 50));
      }
      process.stderr.write(`group sizes round ${round + 1}/${ROUNDS}\n`);
    }
    const base = medians[0] ?? [];
    return GROUP_SIZES.map((size, index) => {
      const own = medians[index] ?? [];
      const ratios = spreadOf(own.map((m, round) => m / (base[round] ?? Number.NaN)));
      return {
        size,
        medianMs: spreadOf(own).median,
        ratio: ratios.median,
        minRatio: ratios.min,
        maxRatio: ratios.max,
      };
    });
  } finally {
    await app.close();
  }
}

/** The target: a group of 32 costs at most 1.5 × a group of 1. */
export function groupSizeTarget(rows: readonly GroupSizeRow[]): TargetResult {
  const largest = rows.find((row) => row.size === 32);
  const ratio = largest?.ratio ?? Number.NaN;
  return {
    label: 'group of 32 / group of 1 (latency)',
    value: `${ratio.toFixed(3)} x`,
    target: '<= 1.50 x',
    met: ratio <= 1.5,
    detail: `rounds ${largest?.minRatio.toFixed(3)}–${largest?.maxRatio.toFixed(3)}`,
  };
}

/** The group-size table. */
export function formatGroupSizes(rows: readonly GroupSizeRow[]): string[] {
  return [
    `Group size (1 client, acquire + release of k write locks; ${ROUNDS} interleaved rounds of ${SLICE_MS / 1000} s per size):`,
    '',
    '| locks in the group | median ms | × group of 1 (median of rounds) | rounds |',
    '|-------------------:|----------:|--------------------------------:|-------:|',
    ...rows.map(
      (r) =>
        `| ${String(r.size).padStart(18)} | ${r.medianMs.toFixed(3).padStart(9)} | ${r.ratio.toFixed(3).padStart(31)} | ${`${r.minRatio.toFixed(2)}–${r.maxRatio.toFixed(2)}`.padStart(6)} |`,
    ),
  ];
}
