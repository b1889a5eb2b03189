// The library's own client CPU per acquire + release (issue 41), measured so that the load of a shared machine cannot
// blur it: `process.cpuUsage()` (user + system of this Node.js process; the database server is another process) over
// many uncontended W1 cycles, against a bare `pg` client sending the library's same two statements with the same
// values, in interleaved rounds in one process. Between the two, the library is measured at three depths (the store,
// the acquisitions service, `LockService`), so the difference of neighbours says where its extra CPU goes.
// `BENCH_ONLY=cpu` runs this alone; BENCH_CPU_CYCLES (default 500) cycles per layer per round, BENCH_ROUNDS rounds.
import type { INestApplicationContext } from '@nestjs/common';
import { LockService } from 'nestjs-db-locks';
import pg from 'pg';
import { RELEASE_ONE, TRY_ACQUIRE_ONE } from '../lib/store/postgres/postgres-lock.queries.sql.js';
import type { BenchDatabase } from './bench-database.js';
import { bootApplication } from './contenders/library.contender.js';
import type { TargetResult } from './report.js';
import { spreadOf } from './stats.js';

/** Target of issue 41: the library's client CPU per cycle at most this many times bare `pg`'s. */
const CPU_TARGET = 1.5;
const NAME = 'bench_cpu';

/** One depth of the client: one uncontended acquire + release. */
export interface Layer {
  readonly id: 'bare' | 'store' | 'acquisitions' | 'library';
  readonly label: string;
  cycle(): Promise<void>;
}

/** The parts of the library's services a layer calls below `LockService` (private fields, read for the bench only). */
interface Internals {
  readonly acquisitions: {
    acquire(group: Group, waitMs: number, signal: undefined): Promise<number>;
    release(stamp: number): Promise<void>;
    readonly store: { tryAcquire(group: Group): Promise<number>; release(stamp: number): Promise<boolean> };
    readonly options: {
      appId: string;
      instance: string;
      defaultPermits: { read: number; write: number };
      grantLeaseMs: number;
      asyncRelease: boolean;
    };
  };
}

function granted(stamp: number): number {
  if (stamp <= 0) throw new Error("the CPU bench's lock was busy");
  return stamp;
}

/** A group of one write lock. */
type Group = [{ name: string; mode: 'write' }];

/**
 * The four layers, from bare `pg` to `LockService`, on one booted application and one dedicated connection, all
 * taking the write lock `name`.
 */
export function layersOf(service: LockService, client: pg.Client, name = NAME): Layer[] {
  const GROUP: Group = [{ name, mode: 'write' }];
  const { acquisitions } = service as unknown as Internals;
  const { store, options } = acquisitions;
  const { appId, instance, defaultPermits, grantLeaseMs, asyncRelease } = options;
  return [
    {
      id: 'bare',
      label: "bare `pg` Client: the library's two statements",
      async cycle() {
        const { rows } = await client.query<{ stamp: string }>({
          name: 'bench_cpu_try_acquire_one',
          text: TRY_ACQUIRE_ONE,
          values: [appId, instance, name, 'W', null, defaultPermits.read, defaultPermits.write, grantLeaseMs],
        });
        const stamp = granted(Number(rows[0]?.stamp ?? 0));
        await client.query({ name: 'bench_cpu_release_one', text: RELEASE_ONE, values: [appId, stamp, asyncRelease] });
      },
    },
    {
      id: 'store',
      label: 'the store (batcher, statement runner, session lane, TypeORM pool, pg)',
      async cycle() {
        await store.release(granted(await store.tryAcquire(GROUP)));
      },
    },
    {
      id: 'acquisitions',
      label: 'the acquisitions service (+ leases, outcomes ledger, telemetry hooks, counters)',
      async cycle() {
        await acquisitions.release(granted(await acquisitions.acquire(GROUP, 0, undefined)));
      },
    },
    {
      id: 'library',
      label: '`LockService` (+ validation of the group and the stamp)',
      async cycle() {
        await service.releaseLocks(granted(await service.tryLocks(GROUP)));
      },
    },
  ];
}

/** µs of this process's CPU (user, system) per cycle over `cycles` cycles of `layer`. */
async function cpuOf(layer: Layer, cycles: number): Promise<{ user: number; system: number }> {
  (globalThis as { gc?: () => void }).gc?.(); // no slice pays for the garbage of the one before
  const before = process.cpuUsage();
  for (let i = 0; i < cycles; i++) await layer.cycle();
  const { user, system } = process.cpuUsage(before);
  return { user: user / cycles, system: system / cycles };
}

/** What the CPU rounds measured: per layer, each round's µs per cycle (user + system) and user alone. */
export interface CpuResult {
  readonly cycles: number;
  readonly rounds: number;
  readonly layers: ReadonlyArray<{ id: Layer['id']; label: string; total: number[]; user: number[] }>;
}

const positive = (name: string, fallback: number): number => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer`);
  return value;
};

/**
 * The CPU rounds: every layer warmed up (unmeasured), then `rounds` rounds of `BENCH_CPU_CYCLES` cycles per layer,
 * in an order that rotates by one each round.
 */
export async function measureCpuPerCall(database: BenchDatabase, rounds: number): Promise<CpuResult> {
  const cycles = positive('BENCH_CPU_CYCLES', 500);
  const app: INestApplicationContext = await bootApplication(database.url, 'bench_cpu');
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    const layers = layersOf(app.get(LockService), client);
    const results = layers.map((layer) => ({ id: layer.id, label: layer.label, total: [] as number[], user: [] as number[] }));
    process.stderr.write('CPU per cycle priming ... ');
    for (const layer of layers) await cpuOf(layer, Math.max(200, cycles / 2));
    process.stderr.write('done\n');
    for (let round = 0; round < rounds; round++) {
      await database.vacuum();
      for (let position = 0; position < layers.length; position++) {
        const index = (round + position) % layers.length;
        const layer = layers[index];
        const result = results[index];
        if (!layer || !result) continue;
        const { user, system } = await cpuOf(layer, cycles);
        result.total.push(user + system);
        result.user.push(user);
      }
      const progress = results.map((r) => `${r.id} ${(r.total[round] ?? Number.NaN).toFixed(0)} µs`).join(', ');
      process.stderr.write(`CPU per cycle round ${round + 1}/${rounds}: ${progress}\n`);
    }
    return { cycles, rounds, layers: results };
  } finally {
    await client.end();
    await app.close();
  }
}

/** Per-round `combine` of layer `over`'s and layer `under`'s µs per cycle (same round). */
function perRound(result: CpuResult, over: Layer['id'], under: Layer['id'], combine: (a: number, b: number) => number) {
  const a = result.layers.find((l) => l.id === over)?.total ?? [];
  const b = result.layers.find((l) => l.id === under)?.total ?? [];
  return a.map((value, k) => combine(value, b[k] ?? Number.NaN));
}

/** The target: `LockService`'s CPU per cycle over bare `pg`'s, median of the per-round ratios. */
export function cpuTarget(result: CpuResult): TargetResult {
  const spread = spreadOf(perRound(result, 'library', 'bare', (a, b) => a / b));
  return {
    label: 'W1 client CPU per cycle: LockService / bare pg',
    value: `${spread.median.toFixed(3)} x`,
    target: `≤ ${CPU_TARGET} x`,
    met: spread.median <= CPU_TARGET,
    detail: `per-round ${spread.min.toFixed(3)}–${spread.max.toFixed(3)}`,
  };
}

/** The table: each layer's median µs per cycle (and user share), and what it adds to the layer below. */
export function formatCpu(result: CpuResult): string[] {
  const f = (value: number): string => (Number.isFinite(value) ? value.toFixed(1) : 'n/a');
  const row = (label: string, median: string, range: string, adds: string): string =>
    `| ${label.padEnd(82)} | ${median.padStart(7)} | ${range.padStart(13)} | ${adds.padStart(7)} |`;
  return [
    `Client CPU per uncontended acquire + release (W1; process.cpuUsage, user + system, of this process; ` +
      `${result.rounds} interleaved rounds of ${result.cycles} cycles per layer):`,
    '',
    row('layer', 'µs', 'min–max', '+ µs'),
    `|${'-'.repeat(84)}|${'-'.repeat(8)}:|${'-'.repeat(14)}:|${'-'.repeat(8)}:|`,
    ...result.layers.map((layer, i) => {
      const spread = spreadOf(layer.total);
      const below = result.layers[i - 1];
      const adds = below ? spreadOf(perRound(result, layer.id, below.id, (a, b) => a - b)).median : Number.NaN;
      return row(layer.label, f(spread.median), `${f(spread.min)}–${f(spread.max)}`, below ? f(adds) : '');
    }),
    '',
    `User time alone: bare ${f(spreadOf(result.layers[0]?.user ?? []).median)} µs, LockService ` +
      `${f(spreadOf(result.layers[3]?.user ?? []).median)} µs per cycle. Nest adds nothing to a direct call of the ` +
      'provider (no interceptor, no guard); "+ µs" is the median of the per-round differences to the layer above.',
  ];
}
