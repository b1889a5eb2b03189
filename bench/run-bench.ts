// `npm run bench`: nestjs-db-locks against PostgreSQL advisory locks, the durable floor and seed 000's algorithm,
// in one run on one database. Each workload is measured in BENCH_ROUNDS (default 10) interleaved rounds; in each round
// every contender runs BENCH_SECONDS / BENCH_ROUNDS seconds (BENCH_SECONDS default 10 per row), in an order that
// rotates from round to round. Then the cost of telemetry: W1 with telemetry off against telemetry on with the
// OpenTelemetry SDK registered, interleaved the same way. BENCH_STRICT=1 exits 1 when a target is missed;
// BENCH_ONLY=telemetry measures the telemetry rows alone, BENCH_ONLY=w1 the breakdown of W1's time alone.
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
  formatTelemetry,
  type RecordingCost,
  targetsHeader,
  telemetryTarget,
} from './report.js';
import { formatGroupSizes, type GroupSizeRow, groupSizeTarget, measureGroupSizes } from './group-size.js';
import { formatSoak, runSoak, soakTargets } from './soak.js';
import { measureRecordingCost, registerBenchSdk, telemetryContenders } from './telemetry.js';
import { breakdownContenders, formatBreakdown } from './w1-breakdown.js';
import { combineRounds, type Measurement, ratesOf, type RoundSample, type Sample } from './stats.js';
import { W1, type Workload, WORKLOADS } from './workloads.js';

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
async function runWorkload(
  database: BenchDatabase,
  workload: Workload,
  plan: BenchPlan,
  contenders: readonly Contender[] = contendersFor(database.url),
): Promise<Measurement[]> {
  const slices: (Sample & Pick<RoundSample, 'round' | 'position'>)[][] = contenders.map(() => []);
  const label = contenders.every((c) => c.id.startsWith('library-'))
    ? `${workload.id} telemetry`
    : contenders.some((c) => c.id.startsWith('rows-'))
      ? `${workload.id} breakdown`
      : workload.id;
  process.stderr.write(`${label} priming ... `);
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
    process.stderr.write(`${label} round ${round + 1}/${plan.rounds}: ${progress.join(', ')}\n`);
  }
  return contenders.map((contender, index) =>
    combineRounds({ contenderId: contender.id, contender: contender.name, workload: workload.id }, slices[index] ?? []),
  );
}

/** `BENCH_ONLY=telemetry`, `BENCH_ONLY=groups` or `BENCH_ONLY=w1` measures those rows alone. */
function benchOnly(): 'telemetry' | 'groups' | 'w1' | undefined {
  const only = process.env.BENCH_ONLY;
  if (only !== undefined && only !== 'telemetry' && only !== 'groups' && only !== 'w1') {
    throw new Error(`BENCH_ONLY must be "telemetry", "groups" or "w1" (got ${only})`);
  }
  return only;
}

/** W1 for the floor, the bare rows of a grant and the library: where an uncontended grant's time goes. */
async function measureBreakdown(database: BenchDatabase, plan: BenchPlan): Promise<string[]> {
  const measurements = await runWorkload(database, W1, plan, breakdownContenders(database.url));
  return [formatTable(measurements), '', ...formatBreakdown(measurements)];
}

/** `BENCH_ONLY=groups`: the group-size table alone. */
async function groupsOnly(database: BenchDatabase): Promise<number> {
  const rows = await measureGroupSizes(database);
  const target = groupSizeTarget(rows);
  console.log(['', ...formatGroupSizes(rows), '', formatTargets([target])].join('\n'));
  return !target.met && process.env.BENCH_STRICT === '1' ? 1 : 0;
}

/**
 * The hot path (W1: tryLocks + releaseLocks of one lock) with telemetry off, and on with the OpenTelemetry SDK
 * registered (every span sampled), in interleaved rounds like the other rows.
 */
async function measureTelemetry(
  database: BenchDatabase,
  plan: BenchPlan,
): Promise<{ measurements: Measurement[]; cost: RecordingCost }> {
  const sdk = registerBenchSdk();
  try {
    const measurements = await runWorkload(database, W1, plan, telemetryContenders(database.url, sdk));
    return { measurements, cost: await measureRecordingCost() };
  } finally {
    await sdk.dispose();
  }
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

/** `npm run bench -- --soak`: the soak and the memory measurements alone (about 12 minutes by default). */
async function soak(database: BenchDatabase): Promise<number> {
  const machine = await describeMachine(database);
  const result = await runSoak(database);
  const targets = soakTargets(result);
  const missed = targets.filter((t) => !t.met).map((t) => t.label);
  console.log(
    [
      '',
      'nestjs-db-locks soak',
      '',
      formatMachine(machine, [], benchPlan()).split('\n').slice(0, 4).join('\n'), // CPU, Node, PostgreSQL, durability
      '',
      ...formatSoak(result, targets),
      '',
      missed.length === 0 ? 'All targets met.' : `MISSED ${missed.length} target(s): ${missed.join('; ')}`,
    ].join('\n'),
  );
  return missed.length > 0 && process.env.BENCH_STRICT === '1' ? 1 : 0;
}

async function main(): Promise<number> {
  const plan = benchPlan();
  const database = await openBenchDatabase();
  process.once('SIGINT', () => void database.dispose().finally(() => process.exit(130)));
  if (process.argv.includes('--soak') || benchOnly() === 'groups') {
    try {
      return await (process.argv.includes('--soak') ? soak(database) : groupsOnly(database));
    } finally {
      await database.dispose();
    }
  }
  if (benchOnly() === 'w1') {
    try {
      console.log(['', ...(await measureBreakdown(database, plan))].join('\n'));
      return 0;
    } finally {
      await database.dispose();
    }
  }
  try {
    const machine = await describeMachine(database);
    const started = Date.now();
    const telemetryOnly = benchOnly() === 'telemetry';
    const measurements: Measurement[] = [];
    let handoff: HandoffResult[] = [];
    let groups: GroupSizeRow[] = [];
    let breakdown: string[] = [];
    if (!telemetryOnly) {
      for (const workload of WORKLOADS) measurements.push(...(await runWorkload(database, workload, plan)));
      breakdown = await measureBreakdown(database, plan);
      handoff = await measureHandoff(database.url, positiveNumber('BENCH_HANDOFFS', '100', true));
      groups = await measureGroupSizes(database);
    }
    const telemetry = await measureTelemetry(database, plan);
    process.stderr.write(`measured in ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
    const targets = telemetryOnly ? [] : [...evaluateTargets(measurements), groupSizeTarget(groups)];
    const handoffMet = telemetryOnly || (handoff[0]?.medianMs ?? Number.NaN) <= HANDOFF_TARGET_MS;
    const overhead = telemetryTarget(telemetry.measurements);
    const missed = [
      ...[...targets, overhead].filter((t) => !t.met).map((t) => t.label),
      ...(handoffMet ? [] : ['hand-off median']),
    ];
    const main = telemetryOnly
      ? []
      : [
          formatTable(measurements),
          '',
          targetsHeader(plan),
          formatTargets(targets),
          '',
          'Other ratios (no target; aggregate, then median and min–max of the per-round ratios):',
          ...informativeRatios(measurements),
          '',
          ...breakdown,
          '',
          ...formatHandoff(handoff),
          '',
          ...formatGroupSizes(groups),
          '',
        ];
    console.log(
      [
        '',
        'nestjs-db-locks benchmark (acquire + release)',
        '',
        formatMachine(machine, telemetryOnly ? [W1] : WORKLOADS, plan),
        '',
        ...main,
        ...formatTelemetry(telemetry.measurements, overhead, telemetry.cost),
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
