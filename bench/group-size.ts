// The cost of a group's size: one client takes and releases a group of k write locks on free names, for k = 1 … 32,
// in interleaved rounds (the order of the sizes rotates each round). Beside the library, in the same rounds, the bare
// SQL of each group's rows (its k lock rows and its log row in one autocommitted statement, released like the
// library): what a group of that size costs before any check. The target is on the latency of acquire + release of
// 32 locks by the library against its own bare rows, judged on the median of the per-round ratios of median latencies.
import { performance } from 'node:perf_hooks';
import { LockService, type LockSpec } from 'nestjs-db-locks';
import pg from 'pg';
import type { BenchDatabase } from './bench-database.js';
import { bootApplication } from './contenders/library.contender.js';
import type { TargetResult } from './report.js';
import { percentile, spreadOf } from './stats.js';

/** The group sizes measured. */
export const GROUP_SIZES = [1, 2, 4, 8, 16, 32] as const;

/** A ratio to the group of 1: median of the per-round ratios, and their range. */
export interface RatioSpread {
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

/** One size's result. */
export interface GroupSizeRow {
  readonly size: number;
  /** Median of the per-round median latencies of acquire + release, ms. */
  readonly medianMs: number;
  /** The library's ratio to its group of 1. */
  readonly ratio: RatioSpread;
  /** The same for the bare SQL of the group's rows. */
  readonly bareMedianMs: number;
  readonly bareRatio: RatioSpread;
  /** The library's latency over its bare rows' at this size, round by round (the target at 32 names). */
  readonly overBare: RatioSpread;
}

const ROUNDS = 9;
const SLICE_MS = 1000;

/**
 * The rows a grant of the group `$1` (names; `$3` their modes) writes, as bare SQL: a stamp from the library's
 * sequence, one lock row per name and the log row, in one autocommitted statement (as `bare-rows.contender.ts` does
 * for one lock).
 */
const INSERT_GROUP_ROWS = {
  name: 'bench_group_rows',
  text: `WITH s AS (SELECT nextval('locking_stamp_seq') AS stamp),
              l AS (INSERT INTO locking (lock_name, mode, app_id, stamp)
                    SELECT r.name, r.mode, $2, s.stamp FROM s, unnest($1::text[], $3::text[]) AS r(name, mode))
         INSERT INTO locking_log (stamp, app_id, instance, lock_names, lock_modes, status, lease_expires)
         SELECT stamp, $2, $2, $1::text[], $3::char(1)[], 'ACQUIRED', now() + interval '30 seconds' FROM s
         RETURNING stamp`,
};

const RELEASE_GROUP_ROWS = { name: 'bench_group_rows_release', text: 'SELECT bench_rows_release_async($1, true)' };

/** One way of taking a group: the library, or its bare rows. */
type TakeGroup = (size: number) => Promise<void>;

function libraryTaker(locks: LockService): TakeGroup {
  const groups = new Map<number, LockSpec[]>(
    GROUP_SIZES.map((size) => [size, Array.from({ length: size }, (_, i) => `GROUP${size}_${i}_WRITE` as LockSpec)]),
  );
  return async (size) => {
    const stamp = await locks.tryLocks(groups.get(size) ?? []);
    if (stamp === 0) throw new Error('group sizes: a free group was refused');
    await locks.releaseLocks(stamp);
  };
}

function bareRowsTaker(client: pg.Client): TakeGroup {
  const names = new Map<number, string[]>(GROUP_SIZES.map((size) => [size, Array.from({ length: size }, (_, i) => `BARE${size}_${i}`)]));
  return async (size) => {
    const group = names.get(size) ?? [];
    const { rows } = await client.query<{ stamp: string }>({
      ...INSERT_GROUP_ROWS,
      values: [group, 'bench-groups-bare', group.map(() => 'W')],
    });
    await client.query({ ...RELEASE_GROUP_ROWS, values: [rows[0]?.stamp] });
  };
}

/** Per-round median latencies (ms) of `take` for every size, one slice per size and taker, interleaved. */
async function measureRounds(database: BenchDatabase, takers: readonly TakeGroup[]): Promise<number[][][]> {
  const medians = takers.map(() => GROUP_SIZES.map((): number[] => []));
  for (const take of takers) for (const size of GROUP_SIZES) for (let i = 0; i < 50; i++) await take(size); // warm-up
  const slices = takers.flatMap((_, taker) => GROUP_SIZES.map((__, index) => ({ taker, index })));
  for (let round = 0; round < ROUNDS; round++) {
    for (let position = 0; position < slices.length; position++) {
      const slice = slices[(round + position) % slices.length];
      const take = slice && takers[slice.taker];
      const size = slice && GROUP_SIZES[slice.index];
      if (!take || size === undefined) continue;
      await database.vacuum();
      const latencies: number[] = [];
      const end = performance.now() + SLICE_MS;
      while (performance.now() < end) {
        const t0 = performance.now();
        await take(size);
        latencies.push(performance.now() - t0);
      }
      medians[slice.taker]?.[slice.index]?.push(percentile(latencies.sort((a, b) => a - b), 50));
    }
    process.stderr.write(`group sizes round ${round + 1}/${ROUNDS}\n`);
  }
  return medians;
}

/** Each size's ratios to the group of 1, round by round. */
function ratiosTo1(medians: readonly number[][]): RatioSpread[] {
  const base = medians[0] ?? [];
  return medians.map((own) => {
    const spread = spreadOf(own.map((m, round) => m / (base[round] ?? Number.NaN)));
    return { median: spread.median, min: spread.min, max: spread.max };
  });
}

/** Measures every size in `ROUNDS` interleaved rounds, for the library (one application) and for its bare rows. */
export async function measureGroupSizes(database: BenchDatabase): Promise<GroupSizeRow[]> {
  const app = await bootApplication(database.url, 'bench-groups');
  const client = new pg.Client({ connectionString: database.url });
  try {
    await client.connect();
    const [library = [], bare = []] = await measureRounds(database, [
      libraryTaker(app.get(LockService)),
      bareRowsTaker(client),
    ]);
    const libraryRatios = ratiosTo1(library);
    const bareRatios = ratiosTo1(bare);
    const none = { median: Number.NaN, min: Number.NaN, max: Number.NaN };
    return GROUP_SIZES.map((size, index) => ({
      size,
      medianMs: spreadOf(library[index] ?? []).median,
      ratio: libraryRatios[index] ?? none,
      bareMedianMs: spreadOf(bare[index] ?? []).median,
      bareRatio: bareRatios[index] ?? none,
      overBare: spreadOf((library[index] ?? []).map((m, round) => m / (bare[index]?.[round] ?? Number.NaN))),
    }));
  } finally {
    await client.end().catch(() => undefined);
    await app.close();
  }
}

/**
 * The target (issue 41): a group of 32 costs the library at most 1.25 × what its own rows cost as bare SQL (median of
 * the per-round ratios); its ratio to a group of 1, the target before, follows as information.
 */
export function groupSizeTarget(rows: readonly GroupSizeRow[]): TargetResult {
  const largest = rows.find((row) => row.size === 32);
  const ratio = largest?.overBare.median ?? Number.NaN;
  return {
    label: 'group of 32: library / its bare rows (latency)',
    value: `${ratio.toFixed(3)} x`,
    target: '<= 1.25 x',
    met: ratio <= 1.25,
    detail:
      `rounds ${largest?.overBare.min.toFixed(3)}–${largest?.overBare.max.toFixed(3)}; ` +
      `32 / 1 locks: library ${largest?.ratio.median.toFixed(3)} x, bare rows ${largest?.bareRatio.median.toFixed(3)} x`,
  };
}

const cell = (value: number, width: number, digits = 3): string =>
  (Number.isFinite(value) ? value.toFixed(digits) : 'n/a').padStart(width);

/** The group-size table. */
export function formatGroupSizes(rows: readonly GroupSizeRow[]): string[] {
  const spread = (r: RatioSpread): string => `${r.min.toFixed(2)}–${r.max.toFixed(2)}`.padStart(9);
  return [
    `Group size (1 client, acquire + release of k write locks; ${ROUNDS} interleaved rounds of ${SLICE_MS / 1000} s per ` +
      'size; "bare rows": the group\'s k lock rows and its log row as bare SQL, in the same rounds):',
    '',
    '| locks | library ms | × group of 1 |    rounds | bare rows ms | × group of 1 |    rounds | library / bare rows |    rounds |',
    '|------:|-----------:|-------------:|----------:|-------------:|-------------:|----------:|--------------------:|----------:|',
    ...rows.map(
      (r) =>
        `| ${String(r.size).padStart(5)} | ${cell(r.medianMs, 10)} | ${cell(r.ratio.median, 12)} | ${spread(r.ratio)} | ` +
        `${cell(r.bareMedianMs, 12)} | ${cell(r.bareRatio.median, 12)} | ${spread(r.bareRatio)} | ` +
        `${cell(r.overBare.median, 19)} | ${spread(r.overBare)} |`,
    ),
  ];
}
