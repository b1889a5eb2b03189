// Instruction counts of the client per W1 cycle, which no load on the machine changes (issue 41): run under
//   valgrind --tool=callgrind node build/bench/cpu-callgrind.js <layer> <cycles>
// with DATABASE_URL set to a migrated database (`node build/bench/cpu-callgrind.js serve` opens one on an embedded
// server and prints its URL until stopped). <layer> is bare, store, acquisitions or library (cpu-per-call.ts); the
// process warms up with 300 cycles, prints `ready`, waits 3 s, runs <cycles>, prints `done` and waits 3 s more: zero
// the counters at `ready` and dump them at `done` (`callgrind_control -z`, `-d`; bench/cpu-callgrind.sh does it), and
// the dump holds the cycles alone (start-up, with its timing-dependent JIT and GC work, varies by 10 % from run to run).
import 'reflect-metadata';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockService } from 'nestjs-db-locks';
import pg from 'pg';
import { openBenchDatabase } from './bench-database.js';
import { bootApplication } from './contenders/library.contender.js';
import { layersOf } from './cpu-per-call.js';

async function serve(): Promise<void> {
  const database = await openBenchDatabase();
  process.stdout.write(`${database.url}\n`);
  await new Promise<void>((resolve) => process.once('SIGTERM', resolve));
  await database.dispose();
}

async function run(layerId: string, cycles: number): Promise<void> {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL must name the migrated database (see `serve`)');
  // CPU_TELEMETRY=off: the application with `telemetry: { enabled: false }`, to see what the no-op hooks cost.
  const options = process.env.CPU_TELEMETRY === 'off' ? { telemetry: { enabled: false } } : {};
  const app = await bootApplication(url, `bench_cpu_${layerId}_${process.pid}`, options);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const layer = layersOf(app.get(LockService), client, `bench_cpu_${layerId}_${process.pid}`).find((l) => l.id === layerId);
    if (!layer) throw new Error(`no layer ${layerId}`);
    for (let i = 0; i < 300; i++) await layer.cycle();
    process.stdout.write('ready\n');
    await sleep(3000);
    for (let i = 0; i < cycles; i++) await layer.cycle();
    process.stdout.write('done\n');
    await sleep(3000);
  } finally {
    await client.end();
    await app.close();
  }
}

const [mode = 'serve', cycles = '0'] = process.argv.slice(2);
(mode === 'serve' ? serve() : run(mode, Number(cycles))).then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(2);
  },
);
