// `npm run bench -- --soak`: what grows with time. Several clients take and release locks on distinct names at full
// rate with a short log retention (BENCH_SOAK_RETENTION_S, default 60): first BENCH_SOAK_WARMUP_MINUTES (default 3)
// that are sampled and printed but not judged, while the log fills from empty to its steady size (see WARM-UP below),
// then BENCH_SOAK_MINUTES (default 10) that the targets judge; every minute the run samples the rate, the lock log's
// rows and size, and the process's heap. Then the heap per held grant and per waiter, 10^4 of each.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockService } from 'nestjs-db-locks';
import type { BenchDatabase } from './bench-database.js';
import { bootApplication } from './contenders/library.contender.js';
import { formatTargets, type TargetResult } from './report.js';

/** One minute of the soak. */
interface SoakMinute {
  readonly minute: number;
  /** A warm-up minute: printed, not judged. */
  readonly warmup: boolean;
  readonly acquisitionsPerSecond: number;
  readonly logRows: number;
  /** `locking_log` with its indexes and TOAST, MiB. */
  readonly logMiB: number;
  readonly heapMiB: number;
}

/** What the soak measured. */
export interface SoakResult {
  readonly clients: number;
  readonly retentionSeconds: number;
  /** The warm-up minutes first, then the judged ones. */
  readonly minutes: readonly SoakMinute[];
  readonly bytesPerGrant: number;
  readonly bytesPerWaiter: number;
}

const CLIENTS = 4;
const MEMORY_COUNT = 10_000;

function setting(name: string, fallback: number, zero = false): number {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value < 0 || (value === 0 && !zero)) {
    throw new Error(`${name} must be a ${zero ? 'non-negative' : 'positive'} number`);
  }
  return value;
}

/**
 * WARM-UP: a new log is not at its steady state for its first minutes. Until the first rows pass the retention,
 * nothing is pruned and no vacuum runs, so that minute is the fastest of the run (1 753/s against 1 424–1 557/s later
 * on 2026-11-23); then the table doubles on disk before the first vacuum of the full table reclaims the pruned rows,
 * the slowest minute (997/s, the third). A log in service lives at its steady size, so the targets judge the minutes
 * after those three (retention 60 s); the warm-up minutes stay in the table.
 */
const DEFAULT_WARMUP_MINUTES = 3;

/** Heap in use after a full collection (the bench runs with --expose-gc), bytes. */
async function settledHeap(): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run the soak with node --expose-gc (npm run bench does)');
  await sleep(50);
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

async function logFootprint(database: BenchDatabase): Promise<{ rows: number; bytes: number }> {
  const [row] = await database.query<{ rows: number; bytes: string }>(
    `SELECT (SELECT count(*) FROM locking_log)::int AS rows, pg_total_relation_size('locking_log') AS bytes`,
  );
  return { rows: row?.rows ?? Number.NaN, bytes: Number(row?.bytes ?? Number.NaN) };
}

/** Runs the soak, then the memory measurements. */
export async function runSoak(database: BenchDatabase): Promise<SoakResult> {
  const warmupMinutes = setting('BENCH_SOAK_WARMUP_MINUTES', DEFAULT_WARMUP_MINUTES, true);
  const minutes = warmupMinutes + setting('BENCH_SOAK_MINUTES', 10);
  const retentionSeconds = setting('BENCH_SOAK_RETENTION_S', 60);
  const app = await bootApplication(database.url, 'soak', {
    logRetentionMs: retentionSeconds * 1000,
    reaperIntervalMs: 1000,
  });
  const samples: SoakMinute[] = [];
  try {
    const locks = app.get(LockService);
    let granted = 0;
    let stopped = false;
    const loop = async (client: number): Promise<void> => {
      const group = [`SOAK_${client}_WRITE` as const];
      while (!stopped) {
        const stamp = await locks.tryLocks(group);
        if (stamp === 0) throw new Error(`soak: SOAK_${client} was busy, but only its own client takes it`);
        await locks.releaseLocks(stamp);
        granted++;
      }
    };
    const loops = Array.from({ length: CLIENTS }, (_, client) => loop(client));
    try {
      for (let minute = 1; minute <= minutes; minute++) {
        const before = granted;
        const started = performance.now();
        await sleep(60_000);
        const rate = ((granted - before) * 1000) / (performance.now() - started);
        const log = await logFootprint(database);
        const heap = await settledHeap();
        const warmup = minute <= warmupMinutes;
        const sample = { minute, warmup, acquisitionsPerSecond: rate, logRows: log.rows, logMiB: log.bytes / 2 ** 20, heapMiB: heap / 2 ** 20 };
        samples.push(sample);
        process.stderr.write(
          `soak minute ${minute}/${minutes}${warmup ? ' (warm-up)' : ''}: ${rate.toFixed(0)}/s, log ${log.rows} rows, ${sample.logMiB.toFixed(1)} MiB, heap ${sample.heapMiB.toFixed(1)} MiB\n`,
        );
      }
    } finally {
      stopped = true;
      await Promise.all(loops);
    }
    const { bytesPerGrant, bytesPerWaiter } = await measureMemory(locks, database);
    return { clients: CLIENTS, retentionSeconds, minutes: samples, bytesPerGrant, bytesPerWaiter };
  } finally {
    await app.close();
  }
}

/** Heap per held grant (10^4 grants of distinct names) and per waiter (10^4 waits for one held name). */
async function measureMemory(
  locks: LockService,
  database: BenchDatabase,
): Promise<{ bytesPerGrant: number; bytesPerWaiter: number }> {
  const names = Array.from({ length: MEMORY_COUNT }, (_, i) => `MEM_${i}_WRITE` as const);
  const base = await settledHeap();
  const stamps: number[] = [];
  for (let i = 0; i < names.length; i += 200) {
    stamps.push(...(await Promise.all(names.slice(i, i + 200).map((name) => locks.tryLocks([name])))));
  }
  if (stamps.some((stamp) => stamp === 0)) throw new Error('memory: a free name was refused');
  const bytesPerGrant = ((await settledHeap()) - base) / MEMORY_COUNT;
  for (let i = 0; i < stamps.length; i += 200) {
    await Promise.all(stamps.slice(i, i + 200).map((stamp) => locks.releaseLocks(stamp)));
  }

  // The waiters wait for a name another application holds.
  const holder = await bootApplication(database.url, 'soak-holder');
  try {
    const held = await holder.get(LockService).tryLocks(['MEM_WAITED_WRITE']);
    const idle = await settledHeap();
    const abort = new AbortController();
    const waits: Promise<unknown>[] = [];
    for (let i = 0; i < MEMORY_COUNT; i++) {
      waits.push(locks.tryLocks(['MEM_WAITED_WRITE'], { waitMs: 600_000, signal: abort.signal }).catch(() => 0));
      if (i % 200 === 199) await sleep(20); // registering 10^4 waiters in bursts the pool can follow
    }
    const registered = async () =>
      (await database.query<{ n: number }>(`SELECT count(*)::int AS n FROM locking_waiters`))[0]?.n ?? 0;
    const deadline = Date.now() + 120_000;
    while ((await registered()) < MEMORY_COUNT && Date.now() < deadline) await sleep(250);
    const bytesPerWaiter = ((await settledHeap()) - idle) / MEMORY_COUNT;
    abort.abort();
    await Promise.all(waits);
    await holder.get(LockService).releaseLocks(held);
    return { bytesPerGrant, bytesPerWaiter };
  } finally {
    await holder.close();
  }
}

/** The soak's targets, on the minutes after the warm-up: steady rate, log rows at rate × retention, flat heap. */
export function soakTargets(result: SoakResult): TargetResult[] {
  const judged = result.minutes.filter((m) => !m.warmup);
  const first = judged[0];
  const last = judged.at(-1);
  if (!first || !last) return [];
  const expectedRows = last.acquisitionsPerSecond * result.retentionSeconds;
  const rate = last.acquisitionsPerSecond / first.acquisitionsPerSecond;
  const rows = last.logRows / expectedRows;
  const heap = last.heapMiB / first.heapMiB;
  return [
    {
      label: 'soak: last minute rate / first after warm-up',
      value: `${rate.toFixed(3)} x`,
      target: '>= 0.95 x',
      met: rate >= 0.95,
      detail: `${first.acquisitionsPerSecond.toFixed(0)}/s then ${last.acquisitionsPerSecond.toFixed(0)}/s`,
    },
    {
      label: 'soak: log rows / (rate x retention)',
      value: `${rows.toFixed(3)} x`,
      target: '0.90–1.10 x',
      met: rows >= 0.9 && rows <= 1.1,
      detail: `${last.logRows} rows, expected ${expectedRows.toFixed(0)}`,
    },
    {
      label: 'soak: heap last minute / first after warm-up',
      value: `${heap.toFixed(3)} x`,
      target: '<= 1.10 x',
      met: heap <= 1.1,
      detail: `${first.heapMiB.toFixed(1)} MiB then ${last.heapMiB.toFixed(1)} MiB`,
    },
  ];
}

/** The soak's table, for the report and the README. */
export function formatSoak(result: SoakResult, targets: readonly TargetResult[]): string[] {
  return [
    `Soak: ${result.clients} clients on distinct names, acquire + release at full rate, log retention ${result.retentionSeconds} s, reaper every 1 s; minutes marked * are the warm-up (not judged)`,
    '',
    '| minute | acquisitions/s | log rows | log table + indexes MiB | heap MiB |',
    '|-------:|---------------:|---------:|------------------------:|---------:|',
    ...result.minutes.map(
      (m) =>
        `| ${`${m.warmup ? '*' : ''}${m.minute}`.padStart(6)} | ${m.acquisitionsPerSecond.toFixed(0).padStart(14)} | ${String(m.logRows).padStart(8)} | ${m.logMiB
          .toFixed(1)
          .padStart(23)} | ${m.heapMiB.toFixed(1).padStart(8)} |`,
    ),
    '',
    formatTargets(targets),
    '',
    `Heap per held grant (10^4 held): ${result.bytesPerGrant.toFixed(0)} bytes; per waiter (10^4 waiting): ${result.bytesPerWaiter.toFixed(0)} bytes`,
  ];
}
