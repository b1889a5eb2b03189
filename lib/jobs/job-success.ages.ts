import type { JobRunStore } from '../store/job-runs.store.js';

/**
 * Each job's last success as this replica knows it (read from the history at each pruning run, or recorded by its own
 * runs), for the gauge of the last success's age. Kept as an age read at a `performance.now()` instant, so that the
 * gauge ages on this replica's monotonic clock from the database's reading, never on its wall clock.
 * @internal
 */
export class JobSuccessAges {
  private readonly lastSucceeded = new Map<string, { readAt: number; ageMs: number }>();

  /** A run of `job` succeeded at `at` (`performance.now()`). */
  record(job: string, at: number): void {
    this.lastSucceeded.set(job, { readAt: at, ageMs: 0 });
  }

  /** Seconds since each job's last success. */
  ages(): ReadonlyMap<string, number> {
    const ages = new Map<string, number>();
    const now = performance.now();
    for (const [job, { readAt, ageMs }] of this.lastSucceeded) ages.set(job, (ageMs + now - readAt) / 1000);
    return ages;
  }

  /** Reloads the last successes from the history; a job retired (or deleted) there loses its series. */
  async reload(store: JobRunStore): Promise<void> {
    const jobs = await store.listJobs();
    const readAt = performance.now();
    const listed = new Set(jobs.map(({ job }) => job));
    for (const job of this.lastSucceeded.keys()) if (!listed.has(job)) this.lastSucceeded.delete(job);
    for (const { job, lastSucceededAt, lastSucceededAgeSeconds } of jobs) {
      if (lastSucceededAt === null || lastSucceededAgeSeconds === null) continue;
      this.lastSucceeded.set(job, { readAt, ageMs: lastSucceededAgeSeconds * 1000 });
    }
  }
}
