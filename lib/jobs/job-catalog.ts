import { LockConfigurationError } from '../errors/index.js';
import { runsPerReplica, type ScheduledJob } from './job-tick.plan.js';

/** `@nestjs/schedule`'s metadata key of a schedule's own `name` (`@Cron(…, { name })`, `@Interval(name, ms)`, …). */
const SCHEDULER_NAME = 'SCHEDULER_NAME';

/** Characters of the history's `job` column (`locking_job`, `locking_job_run`). @internal */
export const JOB_NAME_MAX_LENGTH = 200;

/**
 * A scheduled job's identity in the run history: the schedule's own `name` when it has one, else
 * `<class of the instance>.<method>` (an inherited job is its subclass's).
 * @internal
 */
export function jobIdentityOf(instance: object, key: string | symbol, method: object): string {
  const name: unknown = Reflect.getMetadata(SCHEDULER_NAME, method);
  if (typeof name === 'string' && name.length > 0) return name;
  return `${instance.constructor.name}.${String(key)}`;
}

/**
 * The scheduled jobs of one application, by identity and by the (instance, method) that runs them. Refuses, when
 * they are declared (at start-up), two jobs with one identity (both would share one tick: one of them would not run)
 * and a name the history's column cannot hold (every tick would fail).
 * @internal
 */
export class JobCatalog {
  private readonly places = new Map<string, string>();
  private readonly byTarget = new WeakMap<object, Map<string | symbol, ScheduledJob>>();

  constructor(private readonly appId: string) {}

  /**
   * Declares `job`, found at `place` (e.g. `TasksService.run in ReportsModule`), run by `instance[key]` when given.
   * Throws `LockConfigurationError` for a duplicate identity or a name longer than the column.
   */
  declare(job: ScheduledJob, place: string, target?: { readonly instance: object; readonly key: string | symbol }): void {
    const identity = job.label;
    const other = this.places.get(identity);
    if (other !== undefined) {
      throw new LockConfigurationError(
        `Two scheduled @WithLocks jobs have the identity "${identity}": ${other}, and ${place}. They would share one ` +
          'tick (one of them would not run): give one of them a name of its own (@Cron(…, { name }), ' +
          '@Interval(name, ms), @Timeout(name, ms)) or rename its class',
      );
    }
    const historyName = runsPerReplica(job) ? `${identity}@${this.appId}` : identity;
    if (historyName.length > JOB_NAME_MAX_LENGTH) {
      const perReplica = historyName === identity ? '' : ` (its per-replica name "<job>@<appId>" with appId "${this.appId}")`;
      throw new LockConfigurationError(
        `The scheduled job "${identity}" (${place}) has a history name of ${historyName.length} characters${perReplica}, ` +
          `beyond the ${JOB_NAME_MAX_LENGTH} its column holds: give the job a shorter name` +
          (perReplica ? ' or the module a shorter appId' : ''),
      );
    }
    this.places.set(identity, place);
    if (target === undefined) return;
    let keys = this.byTarget.get(target.instance);
    if (keys === undefined) this.byTarget.set(target.instance, (keys = new Map()));
    keys.set(target.key, job);
  }

  /** The job `instance[key]` runs, if it is one. */
  jobOf(instance: unknown, key: string | symbol): ScheduledJob | undefined {
    return typeof instance === 'object' && instance !== null ? this.byTarget.get(instance)?.get(key) : undefined;
  }
}
