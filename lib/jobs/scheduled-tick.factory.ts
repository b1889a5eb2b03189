import { Logger } from '@nestjs/common';
import { InvalidLockArgumentError, LockModuleNotInitializedError } from '../errors/index.js';
import type { ScheduledTickOptions } from '../interfaces/index.js';
import { MAX_WAIT_MS } from '../lock.constants.js';
import { resolveWithLocks } from '../utils/resolve-with-locks-options.util.js';
import { JOB_NAME_MAX_LENGTH } from './job-catalog.js';
import { jobRunnerOf } from './job-runner.host.js';
import { cronSchedule, intervalSchedule, type JobSchedule } from './job-schedule.util.js';
import type { ScheduledJob } from './job-tick.plan.js';

const logger = new Logger('LockJobs');

/**
 * `LockService.scheduledTick`: validates everything before any database call (`InvalidLockArgumentError`,
 * `InvalidLockSpecError`), declares the job under its name (`LockConfigurationError` for a name already taken), and
 * returns the function each call of which is one tick of the job.
 * @internal
 */
export function scheduledTick(service: object, job: string, options: ScheduledTickOptions, callback: () => unknown): () => Promise<void> {
  if (typeof job !== 'string' || job.length === 0 || job.length > JOB_NAME_MAX_LENGTH) {
    throw new InvalidLockArgumentError('job', job, `a name of 1 to ${JOB_NAME_MAX_LENGTH} characters`);
  }
  if (typeof options !== 'object' || options === null) {
    throw new InvalidLockArgumentError('options', options, 'an object { cron, timeZone? } or { intervalMs }, with locks');
  }
  if (typeof callback !== 'function') throw new InvalidLockArgumentError('callback', callback, 'a function');
  const schedule = scheduleOfOptions(options);
  const { locks, onUnavailable, waitMs, transaction, scheduledRuns } = options;
  const lock = resolveWithLocks([{ locks, onUnavailable, waitMs, transaction, scheduledRuns }]).forCall([]);
  const runner = jobRunnerOf(service);
  if (runner === undefined) throw new LockModuleNotInitializedError(`LockService.scheduledTick('${job}')`);
  const declared: ScheduledJob = { label: job, schedule, runs: scheduledRuns ?? 'once-per-tick' };
  runner.catalog.declare(declared, `LockService.scheduledTick('${job}')`);
  const locked = { ...lock, onUnavailable: lock.onUnavailable ?? 'skip' };
  void runner.register(declared, (request) => runner.runTick(declared, locked, callback, Date.now(), request));
  return async () => {
    const firedAt = Date.now();
    try {
      await runner.runTick(declared, locked, callback, firedAt);
    } catch (error) {
      // As `@nestjs/schedule` does for its jobs: a timer's callback must not reject (an unhandled rejection).
      logger.error(`${job}: ${(error as Error)?.stack ?? String(error)}`);
    }
  };
}

function scheduleOfOptions(options: ScheduledTickOptions): JobSchedule {
  const { cron, timeZone, intervalMs } = options;
  if ((cron === undefined) === (intervalMs === undefined)) {
    throw new InvalidLockArgumentError('options', JSON.stringify({ cron, intervalMs }), 'exactly one of cron and intervalMs');
  }
  if (cron !== undefined) {
    if (typeof cron !== 'string') throw new InvalidLockArgumentError('cron', cron, 'a cron expression');
    if (timeZone !== undefined && (typeof timeZone !== 'string' || timeZone.length === 0)) {
      throw new InvalidLockArgumentError('timeZone', timeZone, 'an IANA time zone, e.g. Europe/Paris');
    }
    try {
      return cronSchedule(cron, timeZone);
    } catch (error) {
      const given = `${cron}${timeZone ? ` (${timeZone})` : ''}`;
      throw new InvalidLockArgumentError('cron', given, `an expression and zone CronJob takes: ${(error as Error).message}`);
    }
  }
  if (typeof intervalMs !== 'number' || !Number.isInteger(intervalMs) || intervalMs < 1 || intervalMs > MAX_WAIT_MS) {
    throw new InvalidLockArgumentError('intervalMs', intervalMs, `an integer from 1 to ${MAX_WAIT_MS}`);
  }
  return intervalSchedule(intervalMs);
}
