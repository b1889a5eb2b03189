// `npm run bench`: nestjs-db-locks against PostgreSQL advisory locks, the durable floor and seed 000's algorithm,
// in one run on one database. Each workload is measured in BENCH_ROUNDS (default 10) interleaved rounds; in each round
// every contender runs BENCH_SECONDS / BENCH_ROUNDS seconds (BENCH_SECONDS default 10 per row), in an order that
// rotates from round to round. Then the cost of telemetry: W1 with telemetry off against telemetry on with the
// OpenTelemetry SDK registered, interleaved the same way. Last, once the PostgreSQL server is gone, the MariaDB rows
// (mysql-bench.ts). BENCH_STRICT=1 exits 1 when a target is missed; BENCH_ONLY=telemetry measures the telemetry rows
// alone, BENCH_ONLY=w1 the breakdown of W1's time alone, BENCH_ONLY=mysql the MariaDB rows alone, BENCH_ONLY=cpu the
// library's client CPU per W1 cycle against bare `pg` alone (cpu-per-call.ts), BENCH_ONLY=leader the leader
// hand-over line alone, BENCH_ONLY=jobs the job tick line alone, BENCH_ONLY=galera the Galera line alone (two instances
// on two nodes of a private 3-node cluster, galera-bench.ts; after the MariaDB rows in the whole run).
// BENCH_BASELINE=<another checkout, built> adds that checkout's library to W1, W2 and W3, in the same rounds, with a
// target: within 3 % of it (a change must not cost the hot path).
import 'reflect-metadata';
import { type BenchDatabase, openBenchDatabase } from './bench-database.js';
import { advisoryContender } from './contenders/advisory.contender.js';
import type { Contender } from './contenders/contender.js';
import { bareRowsContender } from './contenders/bare-rows.contender.js';
import { baselineContender } from './contenders/baseline.contender.js';
import { floorContender } from './contenders/floor.contender.js';
import { libraryContender } from './contenders/library.contender.js';
import { seedContender } from './contenders/seed.contender.js';
import { describeHost, describeMachine } from './machine.js';
import { formatHandoffTable, type HandoffResult, measureHandoff } from './handoff.js';
import { formatHotName, hotNameOnly, measureHotName } from './hot-name.js';
import { formatJobTick, measureJobTick } from './job-tick.js';
import { formatLeaderHandover, leaderHandoverCount, measureLeaderHandover, mysqlLeaderLines } from './leader-handover.js';
import { runGaleraBench } from './galera-bench.js';
import { runMysqlBench } from './mysql-bench.js';
import { runWorkload } from './rounds.js';
import {
  type BenchPlan,
  evaluateTargets,
  formatMachine,
  type TargetResult,
  formatTable,
  formatTargets,
  informativeRatios,
  formatTelemetry,
  type RecordingCost,
  targetsHeader,
  telemetryTarget,
} from './report.js';
import { cpuTarget, formatCpu, measureCpuPerCall } from './cpu-per-call.js';
import { measureGroupBreakdown } from './group-breakdown.js';
import { formatGroupSizes, type GroupSizeRow, groupSizeTarget, measureGroupSizes } from './group-size.js';
import { formatSoak, runSoak, soakTargets } from './soak.js';
import { measureRecordingCost, registerBenchSdk, telemetryContenders } from './telemetry.js';
import { breakdownContenders, formatBreakdown } from './w1-breakdown.js';
import { measureServerTime } from './w1-server-time.js';
import type { Measurement } from './stats.js';
import { W1, W2, type Workload, WORKLOADS } from './workloads.js';

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

/**
 * The contenders of `workload`, in their base order (floors, on W1 the bare rows of a grant, library, advisory, seed);
 * each round rotates it by one. W1 measures the bare rows in the same rounds as the library: its target is judged
 * against them, and the breakdown of its time is read from the same measurements.
 */
function contendersFor(url: string, workload: Workload): Contender[] {
  return [
    floorContender(url, false),
    floorContender(url, true),
    ...(workload === W1 ? [bareRowsContender(url, false), bareRowsContender(url, true)] : []),
    libraryContender(url),
    ...(process.env.BENCH_BASELINE ? [baselineContender(url, process.env.BENCH_BASELINE)] : []),
    advisoryContender(url),
    seedContender(url),
  ];
}

/** What `BENCH_ONLY` may name: those rows are measured alone. */
const ONLY = ['telemetry', 'groups', 'w1', 'mysql', 'workloads', 'cpu', 'leader', 'jobs', 'galera', 'hot'] as const;

/**
 * `BENCH_ONLY=telemetry`, `groups`, `w1`, `mysql`, `workloads` (W1, W2, W3 and their targets), `cpu` (the client CPU
 * per W1 cycle against bare `pg`), `leader` (the leader hand-over), `jobs` (the job tick), `galera` (two instances
 * on two nodes of a Galera cluster) or `hot` (one hot name, on PostgreSQL then MariaDB/MySQL) alone.
 */
function benchOnly(): (typeof ONLY)[number] | undefined {
  const only = process.env.BENCH_ONLY;
  const known = ONLY.find((name) => name === only);
  if (only !== undefined && known === undefined) {
    throw new Error(`BENCH_ONLY must be one of ${ONLY.map((name) => `"${name}"`).join(', ')} (got ${only})`);
  }
  return known;
}

/** W1, W2 and W3 for every contender, in interleaved rounds. */
async function measureWorkloads(database: BenchDatabase, plan: BenchPlan): Promise<Measurement[]> {
  const measurements: Measurement[] = [];
  for (const workload of WORKLOADS) {
    measurements.push(...(await runWorkload(database, workload, plan, contendersFor(database.url, workload))));
  }
  return measurements;
}

/** The workloads' table, their targets and the other ratios. */
function formatWorkloads(measurements: readonly Measurement[], targets: readonly TargetResult[], plan: BenchPlan): string[] {
  return [
    formatTable(measurements),
    '',
    targetsHeader(plan),
    formatTargets(targets),
    '',
    'Other ratios (no target; aggregate, then median and min–max of the per-round ratios):',
    ...informativeRatios(measurements),
  ];
}

/** `BENCH_ONLY=workloads`: W1, W2 and W3 alone (with `BENCH_BASELINE`, a change against the code before it). */
async function workloadsOnly(database: BenchDatabase, plan: BenchPlan): Promise<RunPart> {
  const machine = await describeMachine(database);
  const measurements = await measureWorkloads(database, plan);
  const targets = evaluateTargets(measurements);
  return {
    lines: ['', formatMachine(machine, WORKLOADS, plan), '', ...formatWorkloads(measurements, targets, plan)],
    missed: targets.filter((t) => !t.met).map((t) => t.label),
  };
}

/** Hand-offs measured per way of waiting. */
const handoffCount = (): number => positiveNumber('BENCH_HANDOFFS', '100', true);

/** Job ticks measured (`BENCH_TICKS`, one a second). */
const jobTicks = (): number => positiveNumber('BENCH_TICKS', '60', true);

/** The leader hand-over and the job tick lines (no target: issue 41 asks for the numbers). */
async function leaderAndJobLines(database: BenchDatabase, only?: 'leader' | 'jobs'): Promise<string[]> {
  const leader = only === 'jobs' ? [] : formatLeaderHandover(await measureLeaderHandover(database.url, leaderHandoverCount()), 'NOTIFY');
  const jobs = only === 'leader' ? [] : formatJobTick(await measureJobTick(database.url, jobTicks()));
  return [...leader, ...(leader.length > 0 && jobs.length > 0 ? [''] : []), ...jobs];
}

/** `BENCH_ONLY=leader` (on PostgreSQL, then on MariaDB/MySQL) or `BENCH_ONLY=jobs` (PostgreSQL): that line alone. */
async function leaderOrJobsOnly(only: 'leader' | 'jobs'): Promise<number> {
  const database = await openBenchDatabase();
  try {
    console.log(['', 'PostgreSQL:', '', ...(await leaderAndJobLines(database, only))].join('\n'));
  } finally {
    await database.dispose();
  }
  if (only === 'leader') console.log(['', ...(await mysqlLeaderLines(leaderHandoverCount()))].join('\n'));
  return 0;
}

/** `BENCH_ONLY=w1`: W1 for the floor, the bare rows of a grant and the library alone, then where its time goes. */
async function measureBreakdown(database: BenchDatabase, plan: BenchPlan): Promise<string[]> {
  const measurements = await runWorkload(database, W1, plan, breakdownContenders(database.url), 'W1 breakdown');
  return [formatTable(measurements), '', ...(await explainW1(database, measurements))];
}

/** Where an uncontended grant's time goes, from W1 `measurements`: the steps, then the server's share. */
async function explainW1(database: BenchDatabase, measurements: readonly Measurement[]): Promise<string[]> {
  const w1 = measurements.filter((m) => m.workload === W1.id);
  return [...formatBreakdown(w1), '', ...(await measureServerTime(database, w1))];
}

/** The client CPU per W1 cycle against bare `pg` (`BENCH_ONLY=cpu`, or in the whole run), with its target. */
async function cpuPart(database: BenchDatabase, plan: BenchPlan): Promise<RunPart> {
  const result = await measureCpuPerCall(database, plan.rounds);
  const target = cpuTarget(result);
  return { lines: [...formatCpu(result), '', formatTargets([target])], missed: target.met ? [] : [target.label] };
}

/** `BENCH_ONLY=groups`: the group-size table alone. */
async function groupsOnly(database: BenchDatabase): Promise<number> {
  const rows = await measureGroupSizes(database);
  const target = groupSizeTarget(rows);
  const breakdown = await measureGroupBreakdown(database);
  console.log(['', ...formatGroupSizes(rows), '', formatTargets([target]), '', ...breakdown].join('\n'));
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
    const measurements = await runWorkload(database, W1, plan, telemetryContenders(database.url, sdk), 'W1 telemetry');
    return { measurements, cost: await measureRecordingCost() };
  } finally {
    await sdk.dispose();
  }
}

/** Target of the notified hand-off median (issue 5). */
const HANDOFF_TARGET_MS = 5;

function formatHandoff(results: readonly HandoffResult[]): string[] {
  return [
    ...formatHandoffTable(results),
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

/** What a part of the run prints, and the labels of the targets it missed. */
interface RunPart {
  readonly lines: string[];
  readonly missed: string[];
}

/** The PostgreSQL rows of the whole run (or, with `BENCH_ONLY=telemetry`, the telemetry rows alone). */
async function postgresRows(database: BenchDatabase, plan: BenchPlan, telemetryOnly: boolean): Promise<RunPart> {
  const machine = await describeMachine(database);
  const started = Date.now();
  const measurements: Measurement[] = [];
  let handoff: HandoffResult[] = [];
  let groups: GroupSizeRow[] = [];
  let groupBreakdown: string[] = [];
  let breakdown: string[] = [];
  let leaderAndJobs: string[] = [];
  let cpu: RunPart = { lines: [], missed: [] };
  let hot: RunPart = { lines: [], missed: [] };
  if (!telemetryOnly) {
    measurements.push(...(await measureWorkloads(database, plan)));
    breakdown = await explainW1(database, measurements);
    cpu = await cpuPart(database, plan);
    handoff = await measureHandoff(database.url, handoffCount());
    groups = await measureGroupSizes(database);
    groupBreakdown = await measureGroupBreakdown(database);
    leaderAndJobs = await leaderAndJobLines(database);
    hot = formatHotName(await measureHotName(database.url, plan));
  }
  const telemetry = await measureTelemetry(database, plan);
  process.stderr.write(`measured in ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
  const targets = telemetryOnly ? [] : [...evaluateTargets(measurements), groupSizeTarget(groups)];
  const handoffMet = telemetryOnly || (handoff[0]?.medianMs ?? Number.NaN) <= HANDOFF_TARGET_MS;
  const overhead = telemetryTarget(telemetry.measurements);
  const missed = [
    ...[...targets, overhead].filter((t) => !t.met).map((t) => t.label),
    ...(handoffMet ? [] : ['hand-off median']),
    ...cpu.missed,
    ...hot.missed,
  ];
  const main = telemetryOnly
    ? []
    : [
        ...formatWorkloads(measurements, targets, plan),
        '',
        ...breakdown,
        '',
        ...cpu.lines,
        '',
        ...formatHandoff(handoff),
        '',
        ...formatGroupSizes(groups),
        '',
        ...groupBreakdown,
        '',
        ...leaderAndJobs,
        '',
        ...hot.lines,
        '',
      ];
  return {
    lines: [
      '',
      'nestjs-db-locks benchmark (acquire + release)',
      '',
      formatMachine(machine, telemetryOnly ? [W1] : WORKLOADS, plan),
      '',
      ...main,
      ...formatTelemetry(telemetry.measurements, overhead, telemetry.cost),
    ],
    missed,
  };
}

/** The MariaDB rows, timed (`BENCH_ONLY=mysql`, or after the PostgreSQL rows). */
async function mariadbRows(plan: BenchPlan): Promise<RunPart> {
  const started = Date.now();
  const section = await runMysqlBench(plan, handoffCount());
  process.stderr.write(`MariaDB rows in ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
  return section;
}

/** Seconds per row of the Galera line. */
const GALERA_SECONDS = 5;

/** The Galera line, timed (`BENCH_ONLY=galera`, or after the MariaDB rows, once that server is gone). */
async function galeraLines(): Promise<string[]> {
  const started = Date.now();
  const lines = await runGaleraBench(GALERA_SECONDS, handoffCount());
  process.stderr.write(`Galera line in ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
  return lines;
}

/** `BENCH_ONLY=mysql`: the MariaDB rows alone, with the host and the workloads they run. */
async function mysqlOnly(plan: BenchPlan): Promise<RunPart> {
  const host = describeHost();
  const section = await mariadbRows(plan);
  return {
    lines: [
      '',
      'nestjs-db-locks benchmark on MariaDB/MySQL (acquire + release)',
      '',
      `CPU:        ${host.cpuModel}, ${host.cores} cores, ${host.memoryGiB} GiB RAM`,
      `Node:       ${host.node}`,
      ...[W1, W2].map((w) => `${w.id}:         ${w.description}`),
      '',
      ...section.lines,
    ],
    missed: section.missed,
  };
}

function summary(missed: readonly string[]): number {
  console.log(['', missed.length === 0 ? 'All targets met.' : `MISSED ${missed.length} target(s): ${missed.join('; ')}`].join('\n'));
  return missed.length > 0 && process.env.BENCH_STRICT === '1' ? 1 : 0;
}

async function main(): Promise<number> {
  const plan = benchPlan();
  const only = benchOnly();
  if (only === 'mysql') {
    const part = await mysqlOnly(plan);
    console.log(part.lines.join('\n'));
    return summary(part.missed);
  }
  if (only === 'leader' || only === 'jobs') return leaderOrJobsOnly(only);
  if (only === 'hot') {
    const part = await hotNameOnly(plan);
    console.log(['', ...part.lines].join('\n'));
    return summary(part.missed);
  }
  if (only === 'galera') {
    console.log(['', ...(await galeraLines())].join('\n'));
    return 0;
  }
  const database = await openBenchDatabase();
  const onSigint = (): void => void database.dispose().finally(() => process.exit(130));
  process.once('SIGINT', onSigint);
  let postgres: RunPart;
  try {
    if (process.argv.includes('--soak') || only === 'groups') {
      return await (process.argv.includes('--soak') ? soak(database) : groupsOnly(database));
    }
    if (only === 'w1') {
      console.log(['', ...(await measureBreakdown(database, plan))].join('\n'));
      return 0;
    }
    if (only === 'cpu') {
      const part = await cpuPart(database, plan);
      console.log(['', ...part.lines].join('\n'));
      return summary(part.missed);
    }
    if (only === 'workloads') {
      const part = await workloadsOnly(database, plan);
      console.log(part.lines.join('\n'));
      return summary(part.missed);
    }
    postgres = await postgresRows(database, plan, only === 'telemetry');
  } finally {
    process.off('SIGINT', onSigint);
    await database.dispose();
  }
  console.log(postgres.lines.join('\n'));
  if (only === 'telemetry') return summary(postgres.missed);
  // The MariaDB rows run once the PostgreSQL server is gone: neither shares the two cores with the other.
  const mariadb = await mariadbRows(plan);
  console.log(['', ...mariadb.lines].join('\n'));
  console.log(['', ...(await galeraLines())].join('\n'));
  return summary([...postgres.missed, ...mariadb.missed]);
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(2);
  },
);
