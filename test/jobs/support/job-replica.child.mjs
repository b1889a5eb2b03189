// One replica of a fleet that runs scheduled jobs, in a process of its own (its clock may be shifted with libfaketime:
// see job-fleet.ts). It boots a Nest application context with ScheduleModule and LockModule (the built package, as a
// user's process would) and the jobs named in JOBS; each run of a job records itself in `job_hits` (the fleet's side of
// the story: who ran, when by its own clock and by the database's) before and after its work. Reports `ready` on stdout.
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Cron, Interval, ScheduleModule, Timeout } from '@nestjs/schedule';
import { TypeOrmModule } from '@nestjs/typeorm';
import { LOCK_ENTITIES, LOCK_MYSQL_ENTITIES, LockModule, WithLocks } from 'nestjs-db-locks';
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

const JOBS = { FleetCron, FleetInterval, PerReplicaCron, FailingCron, SlowCron, HangingCron, StartupTimeout, OutageTimeout };
const providers = (env.JOBS ?? 'FleetCron').split(',').map((name) => JOBS[/** @type {keyof typeof JOBS} */ (name)]);

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
    }),
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
