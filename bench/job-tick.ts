import { type INestApplicationContext, Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Cron, ScheduleModule, SchedulerRegistry } from '@nestjs/schedule';
import { TypeOrmModule } from '@nestjs/typeorm';
import { LockModule, WithLocks } from 'nestjs-db-locks';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { POOL_MAX } from './contenders/library.contender.js';
import { type Latency, latencyHead, latencyOf, latencyRow } from './latency.js';

/** A once-per-tick job across a fleet of instances: its start latency and the database work each tick costs. */
export interface JobTickResult {
  readonly instances: number;
  readonly ticks: number;
  /** Ticks that ran once, more than once, and not at all. */
  readonly ranOnce: number;
  readonly ranTwice: number;
  readonly missed: number;
  /** From the tick's scheduled instant to the `@WithLocks` job's body starting on the replica that claimed it. */
  readonly start: Latency;
  /** The same for a bare `@Cron` job (no lock, no claim) of the same schedule: the schedule's own lateness. */
  readonly bare: Latency;
  /** Statements the fleet sends per tick (the idle fleet's background subtracted), and their client-side ms. */
  readonly statementsPerTick: number;
  readonly statementMsPerTick: number;
  /** The idle fleet's background (reaper, listener, lease renewals), per second: what was subtracted. */
  readonly idleStatementsPerSecond: number;
}

const JOB = 'bench-tick';
const BARE_JOB = 'bench-bare-tick';
const INSTANCES = 3;
/** Ticks run before the measured window: connections opened, statements prepared, the job registered. */
const WARMUP_TICKS = 3;

/** Run starts of both jobs, in epoch ms with a fraction (every instance shares this process's clock). */
const runs: Record<typeof JOB | typeof BARE_JOB, number[]> = { [JOB]: [], [BARE_JOB]: [] };
const epochNow = (): number => performance.timeOrigin + performance.now();

@Injectable()
class TickJob {
  @Cron('* * * * * *', { name: JOB })
  @WithLocks('bench_tick_WRITE')
  async run(): Promise<void> {
    runs[JOB].push(epochNow());
  }
}

@Injectable()
class BareTickJob {
  @Cron('* * * * * *', { name: BARE_JOB })
  run(): void {
    runs[BARE_JOB].push(epochNow());
  }
}

/** Every statement this process sends through `pg` (the instances' pools), and their client-side time. */
const sent = { statements: 0, ms: 0 };

function countStatements(): () => void {
  const prototype = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const query = prototype.query;
  prototype.query = function counted(this: unknown, ...args: unknown[]): unknown {
    const started = performance.now();
    sent.statements++;
    const result = query.apply(this, args);
    if (result instanceof Promise) {
      void result.then(
        () => (sent.ms += performance.now() - started),
        () => (sent.ms += performance.now() - started),
      );
    }
    return result;
  };
  return () => {
    prototype.query = query;
  };
}

async function bootInstance(url: string, appId: string, bare: boolean): Promise<INestApplicationContext> {
  @Module({
    imports: [
      TypeOrmModule.forRoot({ type: 'postgres', url, extra: { max: POOL_MAX } }),
      ScheduleModule.forRoot(),
      LockModule.forRoot({ appId }),
    ],
    providers: bare ? [TickJob, BareTickJob] : [TickJob],
  })
  class TickAppModule {}
  return NestFactory.createApplicationContext(TickAppModule, { logger: false });
}

/** Waits until the clock has passed the next whole second by `offsetMs`. */
const nextSecond = (offsetMs: number): Promise<void> => sleep(1000 - (Date.now() % 1000) + offsetMs);

/**
 * Three instances (app ids of their own, pools of their own, on the bench database) each run the same
 * `@Cron('* * * * * *') @WithLocks(...)` job; the first also runs a bare `@Cron` job of the same schedule. Over `ticks`
 * ticks: each tick's start latency on the replica that claimed it, and the statements the fleet sent (all of them,
 * through `pg`), less those of the same fleet idle (the jobs stopped) over as many seconds.
 */
export async function measureJobTick(url: string, ticks: number): Promise<JobTickResult> {
  runs[JOB].length = 0;
  runs[BARE_JOB].length = 0;
  const restore = countStatements();
  const apps: INestApplicationContext[] = [];
  try {
    for (let i = 1; i <= INSTANCES; i++) apps.push(await bootInstance(url, `bench-tick-${i}`, i === 1));
    await sleep(WARMUP_TICKS * 1000);
    // The window opens and closes half a second after a tick, so that no tick is cut in two.
    await nextSecond(500);
    const [from, statements, ms] = [Date.now(), sent.statements, sent.ms];
    await sleep(ticks * 1000);
    const busy = { statements: sent.statements - statements, ms: sent.ms - ms };
    const to = Date.now();
    for (const app of apps) app.get(SchedulerRegistry).getCronJobs().forEach((job) => void job.stop());
    await nextSecond(500);
    const [idleStatements, idleMs] = [sent.statements, sent.ms];
    await sleep(ticks * 1000);
    const idle = { statements: sent.statements - idleStatements, ms: sent.ms - idleMs };
    return summary(ticks, from, to, busy, idle);
  } finally {
    for (const app of apps) await app.close();
    restore();
  }
}

function summary(
  ticks: number,
  from: number,
  to: number,
  busy: { statements: number; ms: number },
  idle: { statements: number; ms: number },
): JobTickResult {
  const window = (t: number): boolean => t >= from && t < to;
  const lateness = (t: number): number => t - Math.floor(t / 1000) * 1000;
  const perTick = new Map<number, number>();
  for (const t of runs[JOB].filter(window)) perTick.set(Math.floor(t / 1000), (perTick.get(Math.floor(t / 1000)) ?? 0) + 1);
  const counts = [...perTick.values()];
  return {
    instances: INSTANCES,
    ticks,
    ranOnce: counts.filter((c) => c === 1).length,
    ranTwice: counts.filter((c) => c > 1).length,
    missed: ticks - perTick.size,
    start: latencyOf(runs[JOB].filter(window).map(lateness)),
    bare: latencyOf(runs[BARE_JOB].filter(window).map(lateness)),
    statementsPerTick: (busy.statements - idle.statements) / ticks,
    statementMsPerTick: (busy.ms - idle.ms) / ticks,
    idleStatementsPerSecond: idle.statements / ticks,
  };
}

/** The job tick table, markdown-friendly. */
export function formatJobTick(result: JobTickResult): string[] {
  return [
    `Job tick (one @Cron('* * * * * *') @WithLocks job on ${result.instances} instances, ${result.ticks} ticks: ` +
      `${result.ranOnce} ran once, ${result.ranTwice} more than once, ${result.missed} not at all):`,
    '',
    ...latencyHead("from the tick's scheduled instant to"),
    latencyRow('a bare @Cron job starting (the schedule alone)', result.bare),
    latencyRow('the job starting on the replica that claimed it', result.start),
    '',
    `Database work per tick (the fleet, idle background subtracted): ${result.statementsPerTick.toFixed(1)} statements, ` +
      `${result.statementMsPerTick.toFixed(1)} ms of round trips (client side, summed; ` +
      `${result.idleStatementsPerSecond.toFixed(1)} statements a second subtracted).`,
  ];
}
