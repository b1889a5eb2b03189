// `npm run bench`: nestjs-db-locks against PostgreSQL advisory locks, the durable floor and seed 000's algorithm,
// in one run on one database. Each workload is measured in BENCH_ROUNDS (default 10) interleaved rounds; in each round
// every contender runs BENCH_SECONDS / BENCH_ROUNDS seconds (BENCH_SECONDS default 10 per row), in an order that
// rotates from round to round. BENCH_STRICT=1 exits 1 when a target is missed.
import 'reflect-metadata';
import { type BenchDatabase, openBenchDatabase } from './bench-database.js';
import { advisoryContender } from './contenders/advisory.contender.js';
import type { Contender } from './contenders/contender.js';
import { floorContender } from './contenders/floor.contender.js';
import { libraryContender } from './contenders/library.contender.js';
import { seedContender } from './contenders/seed.contender.js';
import { describeMachine } from './machine.js';
import { type HandoffResult, measureHandoff } from './handoff.js';
import { measure } from './measure.js';
import {
  type BenchPlan,
  evaluateTargets,
  formatMachine,
  formatTable,
  formatTargets,
  informativeRatios,
  targetsHeader,
} from './report.js';
import { combineRounds, type Measurement, ratesOf, type RoundSample, type Sample } from './stats.js';
import { type Workload, WORKLOADS } from './workloads.js';

/** Unmeasured start of every slice: fresh connections, prepared statements, JIT. */
const WARMUP_MS = 300;

function positiveNumber(name: string, fallback: string, integer: boolean): number {
  const raw = process.env[name] ?? fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
    throw new Error(`${name} must be a positive ${integer ? 'integer' : 'number'} (got ${raw})`);
  }
  return value;
}

function benchPlan(): BenchPlan {
  // Ten rounds: the disk's fsync time drifts by ±15 % from one second to the next on a VM; the median of ten
  // per-round ratios is steady where five were not.
  const seconds = positiveNumber('BENCH_SECONDS', '10', false);
  const rounds = positiveNumber('BENCH_ROUNDS', '10', true);
  return { seconds, rounds, sliceSeconds: seconds / rounds, warmupMs: WARMUP_MS, checkpoints: true };
}

/** The contenders, in their base order (floors, library, advisory, seed); each round rotates it by one. */
function contendersFor(url: string): Contender[] {
  return [
    floorContender(url, false),
    floorContender(url, true),
    libraryContender(url),
    advisoryContender(url),
    seedContender(url),
  ];
}

/**
 * One workload: before round 0, every contender runs once for the warm-up time only (unmeasured), so that the first
 * measured slice pays no first-ever costs; then `rounds` rounds. Round k runs every contender for one slice (own
 * session: warm-up, then measured window), starting with contender k mod n. Every slice starts after a VACUUM of the
 * small tables and a CHECKPOINT, so that none inherits another's dead rows or pays for its dirty pages (with one
 * CHECKPOINT per round, the round's first contender ran 10 to 20 % slower than in the other positions).
 */
async function runWorkload(database: BenchDatabase, workload: Workload, plan: BenchPlan): Promise<Measurement[]> {
  const contenders = contendersFor(database.url);
  const slices: (Sample & Pick<RoundSample, 'round' | 'position'>)[][] = contenders.map(() => []);
  process.stderr.write(`${workload.id} priming ... `);
  for (const contender of contenders) {
    await database.vacuum();
    await measure(contender, workload, { warmupMs: plan.warmupMs, durationMs: 0 });
  }
  process.stderr.write('done\n');
  for (let round = 0; round < plan.rounds; round++) {
    const progress: string[] = [];
    for (let position = 0; position < contenders.length; position++) {
      const index = (round + position) % contenders.length;
      const contender = contenders[index];
      if (!contender) continue;
      await database.vacuum();
      if (!(await database.checkpoint())) plan.checkpoints = false;
      const sample = await measure(contender, workload, {
        warmupMs: plan.warmupMs,
        durationMs: plan.sliceSeconds * 1000,
      });
      slices[index]?.push({ ...sample, round, position });
      progress.push(`${contender.id} ${ratesOf(sample).acquisitionsPerSecond.toFixed(0)}/s`);
    }
    process.stderr.write(`${workload.id} round ${round + 1}/${plan.rounds}: ${progress.join(', ')}\n`);
  }
  return contenders.map((contender, index) =>
    combineRounds({ contenderId: contender.id, contender: contender.name, workload: workload.id }, slices[index] ?? []),
  );
}

/** Target of the notified hand-off median (issue 5). */
const HANDOFF_TARGET_MS = 5;

function formatHandoff(results: readonly HandoffResult[]): string[] {
  return [
    'Hand-off latency (one holder releases, one waiter acquires; from the release call to the grant):',
    '',
    '| waiting                                 | samples | median ms | p99 ms |',
    '|-----------------------------------------|--------:|----------:|-------:|',
    ...results.map(
      (r) =>
        `| ${r.name.padEnd(39)} | ${String(r.samples).padStart(7)} | ${r.medianMs.toFixed(2).padStart(9)} | ${r.p99Ms
          .toFixed(2)
          .padStart(6)} |`,
    ),
    '',
    `Target: median hand-off ≤ ${HANDOFF_TARGET_MS} ms: ${(results[0]?.medianMs ?? Number.NaN) <= HANDOFF_TARGET_MS ? 'PASS' : 'MISSED'}`,
  ];
}

async function main(): Promise<number> {
  const plan = benchPlan();
  const database = await openBenchDatabase();
  process.once('SIGINT', () => void database.dispose().finally(() => process.exit(130)));
  try {
    const machine = await describeMachine(database);
    const started = Date.now();
    const measurements: Measurement[] = [];
    for (const workload of WORKLOADS) measurements.push(...(await runWorkload(database, workload, plan)));
    const handoff = await measureHandoff(database.url, positiveNumber('BENCH_HANDOFFS', '100', true));
    process.stderr.write(`measured in ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
    const targets = evaluateTargets(measurements);
    const handoffMet = (handoff[0]?.medianMs ?? Number.NaN) <= HANDOFF_TARGET_MS;
    const missed = [...targets.filter((t) => !t.met).map((t) => t.label), ...(handoffMet ? [] : ['hand-off median'])];
    console.log(
      [
        '',
        'nestjs-db-locks benchmark (acquire + release)',
        '',
        formatMachine(machine, WORKLOADS, plan),
        '',
        formatTable(measurements),
        '',
        targetsHeader(plan),
        formatTargets(targets),
        '',
        'Other ratios (no target; aggregate, then median and min–max of the per-round ratios):',
        ...informativeRatios(measurements),
        '',
        ...formatHandoff(handoff),
        '',
        missed.length === 0 ? 'All targets met.' : `MISSED ${missed.length} target(s): ${missed.join('; ')}`,
      ].join('\n'),
    );
    return missed.length > 0 && process.env.BENCH_STRICT === '1' ? 1 : 0;
  } finally {
    await database.dispose();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(2);
  },
);
