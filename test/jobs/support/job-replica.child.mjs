// One replica of a fleet that runs scheduled jobs, in a process of its own (its clock may be shifted with libfaketime:
// see job-fleet.ts). It boots a Nest application context with ScheduleModule and LockModule (the built package, as a
// user's process would) and the jobs named in JOBS; each run of a job records itself in `job_hits` (the fleet's side of
// the story: who ran, when by its own clock and by the database's) before and after its work. Reports `ready` on stdout.
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Cron, Interval, ScheduleModule, SchedulerRegistry, Timeout } from '@nestjs/schedule';
import { CronJob } from 'cron';
import { TypeOrmModule } from '@nestjs/typeorm';
import { LOCK_ENTITIES, LOCK_MYSQL_ENTITIES, LockModule, LockService, WithLocks } from 'nestjs-db-locks';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';

const env = process.env;
const mysql = (env.DATABASE_URL ?? '').startsWith('mysql:');
const APP_ID = env.APP_ID ?? 'replica';
const RUN_MS = Number(env.RUN_MS ?? 20);
/** The database's clock in epoch ms. */
const DB_MS = mysql
  ? `TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000`
  : `(extract(epoch FROM clock_timestamp()) * 1000)::bigint`;
const INSERT_HIT = `INSERT INTO job_hits (job, app_id, phase, local_ms, db_ms) VALUES (${mysql ? '?, ?, ?, ?' : '$1, $2, $3, $4'}, ${DB_MS})`;

/** @type {DataSource} */
let dataSource;
/** @param {string} job @param {string} phase */
const hit = (job, phase) => dataSource.query(INSERT_HIT, [job, APP_ID, phase, Date.now()]);

/**
 * Applies method decorators by hand (this file is plain JavaScript), the lowest first, as TypeScript would.
 * @param {Function & { prototype: object }} target @param {string} key @param {Array<(target: object, key: string, descriptor: never) => unknown>} decorators
 */
function decorate(target, key, ...decorators) {
  let descriptor = /** @type {PropertyDescriptor} */ (Object.getOwnPropertyDescriptor(target.prototype, key));
  for (const decorator of decorators.reverse()) descriptor = /** @type {PropertyDescriptor} */ (decorator(target.prototype, key, /** @type {never} */ (descriptor)) ?? descriptor);
  Object.defineProperty(target.prototype, key, descriptor);
  Injectable()(target);
  return target;
}

/** Each job: runs RUN_MS, recording its start and end. */
const work = async (/** @type {string} */ job) => {
  await hit(job, 'start');
  await sleep(RUN_MS);
  await hit(job, 'end');
};

class FleetCron {
  async run() {
    await work('fleet-cron');
  }
}
decorate(FleetCron, 'run', Cron(env.CRON ?? '* * * * * *'), WithLocks('FLEET_CRON_WRITE'));

class FleetInterval {
  async run() {
    await work('fleet-interval');
  }
}
decorate(FleetInterval, 'run', Interval(Number(env.INTERVAL_MS ?? 1000)), WithLocks('FLEET_INTERVAL_WRITE'));

class PerReplicaCron {
  async run() {
    await work('per-replica-cron');
  }
}
decorate(PerReplicaCron, 'run', Cron('* * * * * *'), WithLocks({ locks: ['PER_REPLICA_WRITE'], scheduledRuns: 'per-replica' }));

class FailingCron {
  async run() {
    await hit('failing-cron', 'start');
    throw new RangeError('the report is out of range');
  }
}
decorate(FailingCron, 'run', Cron('* * * * * *'), WithLocks('FAILING_WRITE'));

/** A job that overruns its period: SLOW_MS per run. */
class SlowCron {
  async run() {
    await hit('slow-cron', 'start');
    await sleep(Number(env.SLOW_MS ?? 2500));
    await hit('slow-cron', 'end');
  }
}
decorate(SlowCron, 'run', Cron('* * * * * *'), WithLocks('SLOW_WRITE'));

/** A job that runs HANG_MS: a long time on the replica the test kills. */
class HangingCron {
  async run() {
    await hit('hanging-cron', 'start');
    await sleep(Number(env.HANG_MS ?? 20));
    await hit('hanging-cron', 'end');
  }
}
decorate(HangingCron, 'run', Cron('* * * * * *'), WithLocks('HANGING_WRITE'));

/**
 * A job the application also calls from a timer of its own: a "retry" at 700 ms past each second of this replica's
 * clock (a direct call, never a tick). Its hits say which: `app-timer-cron:tick` or `app-timer-cron:retry`.
 */
class AppTimerCron {
  /** @param {'tick' | 'retry'} caller */
  async run(caller = 'tick') {
    await work(`app-timer-cron:${caller}`);
  }

  onApplicationBootstrap() {
    const retry = () => void this.run('retry').catch(() => undefined);
    this.timer = setTimeout(() => {
      retry();
      this.timer = setInterval(retry, 1000);
    }, 1700 - (Date.now() % 1000));
  }

  beforeApplicationShutdown() {
    clearTimeout(this.timer);
    clearInterval(this.timer);
  }
}
decorate(AppTimerCron, 'run', Cron('* * * * * *'), WithLocks('APP_TIMER_WRITE'));

/** A user's decorator between @Cron and @WithLocks: awaits once, copies no metadata. */
const awaitOnce = (/** @type {object} */ _target, /** @type {string} */ _key, /** @type {PropertyDescriptor} */ descriptor) => {
  const inner = descriptor.value;
  descriptor.value = async function (/** @type {unknown[]} */ ...args) {
    await Promise.resolve();
    return inner.apply(this, args);
  };
  return descriptor;
};

class DecoratedCron {
  async run() {
    await work('decorated-cron');
  }
}
decorate(DecoratedCron, 'run', Cron('* * * * * *'), awaitOnce, WithLocks('DECORATED_WRITE'));

/** Two job classes named TasksService, each in a module of its own; NAMED_TWINS=1 gives their schedules names. */
const twin = (/** @type {string} */ module, /** @type {`${string}_WRITE`} */ lock) => {
  const TasksService = class TasksService {
    async run() {
      await work(`twin-${module}`);
    }
  };
  const name = env.NAMED_TWINS === '1' ? { name: `reports-${module}` } : {};
  decorate(TasksService, 'run', Cron('* * * * * *', name), WithLocks(lock));
  const TwinModule = class {};
  Object.defineProperty(TwinModule, 'name', { value: `Twin${module.toUpperCase()}Module` });
  Module({ providers: [TasksService] })(TwinModule);
  return TwinModule;
};

/** A job inherited from a base class: the job of the subclass, `InheritedCron.run`. */
class BaseCron {
  async run() {
    await work('inherited-cron');
  }
}
decorate(BaseCron, 'run', Cron('* * * * * *'), WithLocks('INHERITED_WRITE'));
class InheritedCron extends BaseCron {}
Injectable()(InheritedCron);

/** A job registered at run time (SchedulerRegistry.addCronJob), each tick through LockService.scheduledTick. */
class RuntimeCron {
  /** @param {LockService} locks @param {SchedulerRegistry} registry */
  constructor(locks, registry) {
    this.locks = locks;
    this.registry = registry;
  }

  onModuleInit() {
    const tick = this.locks.scheduledTick('runtime-cron', { cron: '* * * * * *', locks: ['RUNTIME_WRITE'] }, () => work('runtime-cron'));
    const job = new CronJob('* * * * * *', tick);
    this.registry.addCronJob('runtime-cron', job);
    job.start();
  }
}
Injectable()(RuntimeCron);
Reflect.defineMetadata('design:paramtypes', [LockService, SchedulerRegistry], RuntimeCron);

/** A job under a read lock (the test gives it permits): its locks alone would let its runs overlap. SHARED_MS per run. */
class SharedCron {
  async run() {
    await hit('shared-cron', 'start');
    await sleep(Number(env.SHARED_MS ?? 1500));
    await hit('shared-cron', 'end');
  }
}
decorate(SharedCron, 'run', Cron('* * * * * *'), WithLocks('SHARED_CRON_READ'));

/** A start-up task under locks: runs TIMEOUT_RUN_MS, TIMEOUT_MS after the replica started. */
class StartupTimeout {
  async run() {
    await hit('startup-timeout', 'start');
    await sleep(Number(env.TIMEOUT_RUN_MS ?? 20));
    await hit('startup-timeout', 'end');
  }
}
decorate(StartupTimeout, 'run', Timeout(Number(env.TIMEOUT_MS ?? 500)), WithLocks('STARTUP_TIMEOUT_WRITE'));

/** A start-up task that reports `running` on stdout once started, then runs OUTAGE_RUN_MS without the database. */
class OutageTimeout {
  async run() {
    await hit('outage-timeout', 'start');
    process.stdout.write(`${JSON.stringify({ event: 'running', appId: APP_ID })}\n`);
    await sleep(Number(env.OUTAGE_RUN_MS ?? 2000));
  }
}
decorate(OutageTimeout, 'run', Timeout(Number(env.TIMEOUT_MS ?? 500)), WithLocks('OUTAGE_WRITE'));

const JOBS = { FleetCron, FleetInterval, PerReplicaCron, FailingCron, SlowCron, HangingCron, AppTimerCron, DecoratedCron, InheritedCron, RuntimeCron, SharedCron, StartupTimeout, OutageTimeout };
/** Jobs that come in modules of their own. */
const MODULES = { Twins: () => [twin('a', 'TWIN_A_WRITE'), twin('b', 'TWIN_B_WRITE')] };
const names = (env.JOBS ?? 'FleetCron').split(',');
const providers = names.filter((name) => name in JOBS).map((name) => JOBS[/** @type {keyof typeof JOBS} */ (name)]);
const modules = names.filter((name) => name in MODULES).flatMap((name) => MODULES[/** @type {keyof typeof MODULES} */ (name)]());

class ReplicaModule {}
Module({
  imports: [
    mysql
      ? TypeOrmModule.forRoot({ type: 'mariadb', url: env.DATABASE_URL, timezone: 'Z', entities: [...LOCK_MYSQL_ENTITIES], extra: { connectionLimit: 4 } })
      : TypeOrmModule.forRoot({ type: 'postgres', url: env.DATABASE_URL, entities: [...LOCK_ENTITIES], extra: { max: 4 } }),
    ScheduleModule.forRoot(),
    LockModule.forRoot({
      ...(mysql ? { dialect: 'mysql' } : {}),
      appId: APP_ID,
      leaseMs: Number(env.LEASE_MS ?? 30000),
      renewIntervalMs: env.RENEW_MS ? Number(env.RENEW_MS) : undefined,
      reaperIntervalMs: Number(env.REAPER_MS ?? 10000),
      ...(env.LOG_RETENTION_MS ? { logRetentionMs: Number(env.LOG_RETENTION_MS) } : {}),
    }),
    ...modules,
  ],
  providers,
})(ReplicaModule);

/** LOG_LEVELS: Nest's log levels, comma-separated (empty: none; the failing job's errors would fill the output). */
const levels = (env.LOG_LEVELS ?? 'error').split(',').filter(Boolean);
/**
 * LOG_JSON=1: each line of those levels goes to stdout as a `log` event ({ level, context, message }), for the test to
 * read the replica's own log.
 */
const jsonLogger = Object.fromEntries(
  ['log', 'error', 'warn', 'debug', 'verbose', 'fatal'].map((level) => [
    level,
    (/** @type {unknown} */ message, /** @type {unknown[]} */ ...rest) => {
      if (!levels.includes(level)) return;
      const context = rest.length > 0 ? String(rest[rest.length - 1]) : undefined;
      process.stdout.write(`${JSON.stringify({ event: 'log', level, context, message: String(message) })}\n`);
    },
  ]),
);
const logger = env.LOG_JSON === '1' ? jsonLogger : levels.length > 0 ? levels : false;
const app = await NestFactory.createApplicationContext(ReplicaModule, { logger: /** @type {never} */ (logger) });
dataSource = app.get(DataSource);
process.stdout.write(`${JSON.stringify({ event: 'ready', appId: APP_ID, localMs: Date.now() })}\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
