import type { ResolvedWithLocks } from '../utils/resolve-with-locks-options.util.js';
import type { RunRequest } from '../store/job-runs.store.js';
import type { JobCatalog } from './job-catalog.js';
import type { RunRequested } from './job-requests.poller.js';
import type { ScheduledJob } from './job-tick.plan.js';

/** What runs an application's scheduled jobs (`LockJobs`), as code that cannot import it sees it. @internal */
export interface JobRunner {
  readonly catalog: JobCatalog;
  register(job: ScheduledJob, runNow?: RunRequested): Promise<void>;
  runTick(job: ScheduledJob, lock: ResolvedWithLocks, call: () => unknown, firedAt: number, request?: RunRequest): Promise<unknown>;
}

/** The job runner of each application's `LockService` (without importing `LockJobs`, which injects `LockService`). */
const runners = new WeakMap<object, JobRunner>();

/** Records `runner` as the job runner of `service`'s application. @internal */
export function bindJobRunner(service: object, runner: JobRunner): void {
  runners.set(service, runner);
}

/** The job runner of `service`'s application, once its module is initialised. @internal */
export function jobRunnerOf(service: object): JobRunner | undefined {
  return runners.get(service);
}
