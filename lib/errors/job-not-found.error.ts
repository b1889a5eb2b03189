import { LockError } from './lock.error.js';

/**
 * A control of scheduled jobs (`LockAdminService.pauseJob`, `resumeJob`, `runJobNow`) named a job that no replica has
 * registered (see `LockAdminService.getJobs`). Nothing was changed.
 * @publicApi
 */
export class JobNotFoundError extends LockError {
  constructor(
    /** The job that matched no registered job. */
    readonly job: string,
  ) {
    super(`No scheduled job "${job}" is registered (see the jobs listed by LockAdminService.getJobs or \`nestjs-db-locks jobs\`)`);
  }
}
