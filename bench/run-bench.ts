// `npm run bench`: nestjs-db-locks against PostgreSQL advisory locks, the durable floor and seed 000's algorithm,
// in one run on one database. BENCH_SECONDS (default 5) per row; BENCH_STRICT=1 exits 1 when a target is missed.
import 'reflect-metadata';
import { type BenchDatabase, openBenchDatabase } from './bench-database.js';
import { advisoryContender } from './contenders/advisory.contender.js';
import type { Contender } from './contenders/contender.js';
import { floorContender } from './contenders/floor.contender.js';
import { libraryContender } from './contenders/library.contender.js';
import { seedContender } from './contenders/seed.contender.js';
import { describeMachine } from './machine.js';
import { measure } from './measure.js';
import { evaluateTargets, formatMachine, formatTable, formatTargets, informativeRatios } from './report.js';
import { type Measurement, ratesOf } from './stats.js';
import { WORKLOADS } from './workloads.js';

const WARMUP_MS = 1000;

function benchSeconds(): number {
  const raw = process.env.BENCH_SECONDS ?? '5';
  const seconds = Number(raw);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new Error(`BENCH_SECONDS must be a positive number (got ${raw})`);
  return seconds;
}

/** Interleaved per workload (floors, library, advisory, seed) so that table bloat favours no one. */
function contendersFor(url: string): Contender[] {
  return [
    floorContender(url, false),
    floorContender(url, true),
    libraryContender(url),
    advisoryContender(url),
    seedContender(url),
  ];
}

async function runAll(database: BenchDatabase, seconds: number): Promise<Measurement[]> {
  const measurements: Measurement[] = [];
  for (const workload of WORKLOADS) {
    for (const contender of contendersFor(database.url)) {
      await database.settle();
      process.stderr.write(`${workload.id} ${contender.name} ... `);
      const m = await measure(contender, workload, { warmupMs: WARMUP_MS, durationMs: seconds * 1000 });
      process.stderr.write(`${ratesOf(m).acquisitionsPerSecond.toFixed(0)} acquisitions/s\n`);
      measurements.push(m);
    }
  }
  return measurements;
}

async function main(): Promise<number> {
  const seconds = benchSeconds();
  const database = await openBenchDatabase();
  process.once('SIGINT', () => void database.dispose().finally(() => process.exit(130)));
  try {
    const machine = await describeMachine(database);
    const measurements = await runAll(database, seconds);
    const targets = evaluateTargets(measurements);
    const missed = targets.filter((t) => !t.met);
    console.log(
      [
        '',
        'nestjs-db-locks benchmark (acquire + release)',
        '',
        formatMachine(machine, WORKLOADS, seconds),
        '',
        formatTable(measurements),
        '',
        'Targets:',
        formatTargets(targets),
        '',
        'Other ratios (no target):',
        ...informativeRatios(measurements),
        '',
        missed.length === 0 ? 'All targets met.' : `MISSED ${missed.length} target(s): ${missed.map((t) => t.label).join('; ')}`,
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
