import type { LockJobRuns } from './lock-job.interface.js';
import type { LockSpec } from './lock-spec.interface.js';
import type { LockUnavailableAction, WithLocksTransactionOptions } from './with-locks-options.interface.js';

/**
 * The schedule of a job registered at run time, as its `CronJob` fires it: the same expression and time zone.
 * @publicApi
 */
export interface ScheduledTickCron {
  /** The cron expression the `CronJob` is given, e.g. `'0 *\/5 * * * *'`: it names each tick by its fire time. */
  readonly cron: string;
  /**
   * The time zone the `CronJob` is given.
   * @default the system's, as `CronJob`'s
   */
  readonly timeZone?: string;
  /** Not with `cron`: a job has one schedule. */
  readonly intervalMs?: never;
}

/**
 * The schedule of a job registered at run time on `setInterval`: the same period.
 * @publicApi
 */
export interface ScheduledTickInterval {
  /** The period given to `setInterval`, in ms (an integer from 1 to 2147483647): one tick per period of the database clock. */
  readonly intervalMs: number;
  /** Not with `intervalMs`: a job has one schedule. */
  readonly cron?: never;
  /** Only with `cron`. */
  readonly timeZone?: never;
}

/**
 * `LockService.scheduledTick`'s options: the job's schedule (`cron` or `intervalMs`) and its locks, as
 * `@WithLocks` takes them on a `@Cron` / `@Interval` method.
 * @publicApi
 */
export type ScheduledTickOptions = (ScheduledTickCron | ScheduledTickInterval) & {
  /** The job's lock group, e.g. `['REPORTS_WRITE']`. */
  readonly locks: readonly LockSpec[];
  /**
   * What to do when the group is not available.
   * @default 'skip'
   */
  readonly onUnavailable?: LockUnavailableAction;
  /**
   * Wait up to this many milliseconds for the group (see `TryLocksOptions.waitMs`).
   * @default 0
   */
  readonly waitMs?: number;
  /**
   * Runs the callback in a fenced transaction (see `WithLocksOptions.transaction`).
   * @default false
   */
  readonly transaction?: boolean | WithLocksTransactionOptions;
  /**
   * Whether each tick runs once across the fleet or on every replica (see `WithLocksOptions.scheduledRuns`).
   * @default 'once-per-tick'
   */
  readonly scheduledRuns?: LockJobRuns;
};
