import type { Logger } from '@nestjs/common';
import { LockStoreError, LockTablesMissingError } from '../errors/index.js';
import type { JobRunStore, TickCheck } from '../store/job-runs.store.js';
import type { LockTelemetry } from '../telemetry/lock-telemetry.service.js';
import type { JobSkewWarner } from './job-skew.warner.js';
import type { ScheduledJob, TickPlan } from './job-tick.plan.js';

/**
 * The ticks a replica does not run, as `LockJobs` accounts for them: the pre-check of a once-per-tick tick (skipped
 * when another replica claimed it), ticks skipped busy or elsewhere, ticks of a paused job, each counted in the metrics
 * with one debug line; and the one warning of a history without tables.
 * @internal
 */
export class JobTickSkips {
  private missingTablesWarned = false;

  constructor(
    private readonly store: JobRunStore,
    private readonly telemetry: LockTelemetry,
    private readonly logger: Logger,
    private readonly appId: () => string,
    private readonly skew: JobSkewWarner,
  ) {}

  /** A tick of a paused job: counted `paused`, one debug line. */
  paused(job: ScheduledJob, plan: TickPlan, tick: number): void {
    this.telemetry.jobRan(plan.job, 'paused');
    this.logger.debug(`Skipped ${job.label} tick ${new Date(tick).toISOString()}: the job is paused`);
  }

  /**
   * The pre-check of a once-per-tick tick: true when another replica has claimed it (counted, logged; no lock taken).
   * The database clock it returns feeds the skew warning. A history without tables leaves the decision to the locks,
   * as before; a database that does not answer skips the tick, as a failed acquisition of the locks did.
   */
  async runElsewhere(job: ScheduledJob, plan: TickPlan): Promise<boolean> {
    const sentAt = Date.now();
    let check: TickCheck;
    try {
      check = await this.store.checkTick(plan.job, plan.source);
    } catch (error) {
      if (!(error instanceof LockTablesMissingError) && !(error instanceof LockStoreError)) throw error;
      if (error instanceof LockTablesMissingError) {
        this.warnMissingTables();
        return false;
      }
      // The database does not answer: its locks could not be taken either. Skipped as a failed acquisition is.
      this.logger.error(`Skipped a tick of ${job.label}: ${error.message}`);
      return true;
    }
    this.skew.check(plan, check.dbNow, sentAt, Date.now());
    if (check.taken) this.skipped(job, plan, check.tick, 'elsewhere');
    return check.taken;
  }

  /** A tick another replica ran, or that found a run of the job going. */
  skipped(job: ScheduledJob, plan: TickPlan, tick: number, why: 'busy' | 'elsewhere'): void {
    this.telemetry.jobRan(plan.job, why === 'busy' ? 'skipped-busy' : 'skipped-elsewhere');
    const reason = why === 'busy' ? 'a run of it is still going' : 'already run elsewhere';
    this.logger.debug(`Skipped ${job.label} tick ${new Date(tick).toISOString()}: ${reason}`);
  }

  /**
   * The locks were busy: the tick is counted as skipped busy (a replica that comes later may still run it), or paused
   * when the job is.
   */
  async countBusy(plan: TickPlan): Promise<void> {
    const claim = await this.store.claim(plan.job, plan.source, this.appId(), null).catch((error: unknown) => {
      if (error instanceof LockTablesMissingError) this.warnMissingTables();
      return undefined;
    });
    this.telemetry.jobRan(plan.job, claim?.result === 'paused' ? 'paused' : 'skipped-busy');
  }

  /** Warns once that the history has no tables (the migrations have not run). */
  warnMissingTables(): void {
    if (this.missingTablesWarned) return;
    this.missingTablesWarned = true;
    this.logger.warn(
      'The run history of scheduled jobs has no tables: jobs run under their locks on every replica, as before, ' +
        'until you run the lock migrations (LOCK_MIGRATIONS)',
    );
  }
}
