import {
  type BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  type OnModuleDestroy,
  type OnModuleInit,
} from '@nestjs/common';
import { IllegalMonitorStateError, LockNotAcquiredError, LockStoreError, LockTablesMissingError } from '../errors/index.js';
import { RESOLVED_LOCK_OPTIONS } from '../lock.constants.js';
import { PRUNE_BATCH_ROWS } from '../services/lock-reaper.service.js';
import { LockService } from '../services/lock.service.js';
import { LockTelemetry } from '../telemetry/lock-telemetry.service.js';
import type { ResolvedLockOptions } from '../utils/resolve-lock-options.util.js';
import type { ResolvedWithLocks } from '../utils/resolve-with-locks-options.util.js';
import {
  type JobRegistration,
  JobRunStore,
  type RunEnd,
  type RunRequest,
  type TickClaim,
} from '../store/job-runs.store.js';
import { JobCatalog } from './job-catalog.js';
import { JobRunEndsWriter } from './job-run-ends.writer.js';
import { isLockLost, messageOf, nameOf, perReplicaWaitMs } from './job-run.util.js';
import { JobSkewWarner } from './job-skew.warner.js';
import { JobSuccessAges } from './job-success.ages.js';
import { isShutdownRefusal } from './shutdown-refusal.util.js';
import { bindJobRunner } from './job-runner.host.js';
import { JobRequestsPoller, type RunRequested } from './job-requests.poller.js';
import { JobTickSkips } from './job-tick-skips.js';
import { planTick, runsPerReplica, type ScheduledJob, type TickPlan } from './job-tick.plan.js';

export type { ScheduledJob } from './job-tick.plan.js';

/** Share of the reaper's interval one pruning run may take (then the next run goes on), as for the lock log. */
const PRUNE_BUDGET_SHARE = 0.5;

/**
 * A job is retired when no replica has kept it for this many reaper intervals (and at least the retention): live
 * replicas keep the jobs they registered at every pruning run, one reaper interval apart.
 */
const RETIRE_AFTER_REAPER_INTERVALS = 3;

/**
 * Runs the ticks of scheduled `@WithLocks` jobs so that each tick runs once across the fleet: a replica first checks
 * whether the tick is claimed already (then it skips it and takes no lock); otherwise the replica that holds the job's
 * locks claims the tick in `locking_job_run` (one row per job and tick: exactly one claim wins), runs the method, and
 * records its end (late, when the database was away); the others skip it, and count themselves in the tick's row. A
 * per-replica or `@Timeout` run waits for its locks instead: the replicas' runs take turns. A `@Cron` tick is named
 * by its fire time (the latest one at or before the replica's clock when the schedule invoked the job), a
 * once-per-tick `@Interval` tick by the current period of the database clock. Once shutdown has begun, ticks are skipped with one debug line.
 * @internal
 */
@Injectable()
export class LockJobs implements OnModuleInit, OnModuleDestroy, BeforeApplicationShutdown {
  private static readonly byService = new WeakMap<LockService, LockJobs>();
  private readonly logger = new Logger('LockJobs');
  private closing = false;
  /** The ticks under way, so that shutdown lets them record their end before the pool closes. */
  private readonly ticks = new Set<Promise<unknown>>();
  private readonly skew = new JobSkewWarner(this.logger);
  /** The ends that could not be written when their runs ended, written late. */
  private readonly ends: JobRunEndsWriter;
  /** Each job's last success, for the metrics' gauge. */
  private readonly successes = new JobSuccessAges();
  /** The application's scheduled jobs, by identity and by the method that runs them (start-up refusals). */
  readonly catalog: JobCatalog;
  /** The jobs this replica registered (their names in the history), kept alive at each pruning run. */
  private readonly registered = new Set<string>();
  /** The "run now" requests of this replica's jobs, looked for every second. */
  private readonly requests: JobRequestsPoller;
  /** The ticks this replica does not run: counted and logged. */
  private readonly skips: JobTickSkips;

  constructor(
    private readonly service: LockService,
    @Inject(JobRunStore) private readonly store: JobRunStore,
    @Inject(RESOLVED_LOCK_OPTIONS) private readonly options: ResolvedLockOptions,
    private readonly telemetry: LockTelemetry,
  ) {
    this.catalog = new JobCatalog(options.appId);
    this.ends = new JobRunEndsWriter(store, this.logger, options.leaseMs);
    this.skips = new JobTickSkips(store, telemetry, this.logger, () => service.appId, this.skew);
    this.requests = new JobRequestsPoller(store, this.logger, () => this.skips.warnMissingTables());
  }

  /** The job runner of `service`'s application (undefined when the module is older than this one). */
  static of(service: LockService): LockJobs | undefined {
    return LockJobs.byService.get(service);
  }

  /** @internal */
  onModuleInit(): void {
    LockJobs.byService.set(this.service, this);
    bindJobRunner(this.service, this);
    this.telemetry.observeJobs(() => this.successes.ages());
  }

  /** From now on, ticks are skipped (the locks are refused from here on too). @internal */
  onModuleDestroy(): void {
    this.closing = true;
    this.requests.close();
  }

  /** Awaits the ticks under way, then gives the ends not written yet a last, bounded try, while the DataSource is still open. @internal */
  async beforeApplicationShutdown(): Promise<void> {
    await Promise.allSettled([...this.ticks]);
    await this.ends.close();
  }

  /**
   * Records the job's schedule and next tick at start-up (for the history's readers); a failure is logged only. With
   * `runNow` (how this replica runs one request of the job: see `runTick`'s `request`), this replica takes its share of
   * the job's "run now" requests.
   */
  async register(job: ScheduledJob, runNow?: RunRequested): Promise<void> {
    const plan = planTick(job, this.service.appId, Date.now());
    const source = plan.source;
    const nextTick = 'at' in source ? plan.next(source.at) : null;
    this.registered.add(plan.job);
    if (runNow !== undefined) this.requests.add(plan.job, runNow);
    await this.store
      .touchJob({ job: plan.job, schedule: plan.schedule, nextTick }, false)
      .catch((error: unknown) => {
        if (error instanceof LockTablesMissingError) this.skips.warnMissingTables();
        else this.logger.warn(`${plan.job}: could not register in the job history: ${messageOf(error)}`);
      });
  }

  /**
   * Runs one tick of `job`: the method runs (through `call`) only if this replica takes the job's locks and then wins
   * the tick's claim. `firedAt` is this replica's clock when the schedule invoked the job: it names a cron tick.
   * Resolves with the method's result, or undefined when the tick is skipped or cut short by the shutdown (a lock the
   * method asked for refused with `LockShutdownError`: one debug line, no end recorded, so the history shows the run
   * `abandoned`); rejects with the method's own error (the schedule module logs it), never with a shutdown. With
   * `request`, the run is that "run now" of the job instead of a tick: claimed under the job's locks as a tick is, once
   * across the fleet, whether the job is paused or not.
   */
  runTick(job: ScheduledJob, lock: ResolvedWithLocks, call: () => unknown, firedAt: number, request?: RunRequest): Promise<unknown> {
    if (this.closing) {
      this.logger.debug(`Skipped a tick of ${job.label}: the application is shutting down`);
      return Promise.resolve(undefined);
    }
    const tick = this.tick(job, lock, call, firedAt, request);
    this.ticks.add(tick);
    const forget = () => void this.ticks.delete(tick);
    tick.then(forget, forget);
    return tick;
  }

  /**
   * Prunes the history (as the lock log is pruned), keeps this replica's jobs registered and retires those that no
   * replica has kept for max(logRetentionMs, 3 reaper intervals) (per-replica and `@Timeout` jobs of replicas gone),
   * then reloads the jobs' last successes for the gauge (whose series of retired jobs go).
   */
  async prune(): Promise<number> {
    try {
      return await this.pruneHistory();
    } catch (error) {
      // A database migrated before the run history existed: the locks work; the history waits for the migration.
      if (!(error instanceof LockTablesMissingError)) throw error;
      this.skips.warnMissingTables();
      return 0;
    }
  }

  private async pruneHistory(): Promise<number> {
    let total = 0;
    const retention = this.options.logRetentionMs;
    if (retention > 0) {
      const deadline = performance.now() + this.options.reaperIntervalMs * PRUNE_BUDGET_SHARE;
      for (;;) {
        const pruned = await this.store.pruneRuns(retention, PRUNE_BATCH_ROWS);
        total += pruned;
        if (pruned < PRUNE_BATCH_ROWS || performance.now() >= deadline) break;
      }
      await this.store.keepJobs([...this.registered]);
      await this.store.retireJobs(Math.max(retention, RETIRE_AFTER_REAPER_INTERVALS * this.options.reaperIntervalMs));
    }
    if (this.telemetry.enabled) await this.successes.reload(this.store);
    return total;
  }

  private async tick(
    job: ScheduledJob,
    lock: ResolvedWithLocks,
    call: () => unknown,
    firedAt: number,
    request?: RunRequest,
  ): Promise<unknown> {
    const scheduled = planTick(job, this.service.appId, firedAt);
    // A request is named by its own tick; the job's next tick stays as the schedule set it.
    const plan: TickPlan = request ? { ...scheduled, source: { at: request.tick }, skewBoundMs: undefined, next: () => null, manual: true } : scheduled;
    const perReplica = runsPerReplica(job);
    // Once per tick: a tick already run elsewhere is skipped before the locks are taken (the claim still decides).
    if (!perReplica && !request && (await this.skips.runElsewhere(job, plan))) return undefined;
    let claim: TickClaim | undefined;
    let stamp = 0;
    let end: RunEnd | undefined;
    let endedAt = 0;
    /** The claimed run was refused a lock because the application is stopping: no end is recorded (abandoned). */
    let cutShort = false;
    const run = async (): Promise<unknown> => {
      stamp = this.service.currentLock()?.stamp ?? 0;
      try {
        const sentAt = Date.now();
        claim = request
          ? await this.store.claimRequest(plan.job, request.tick, this.service.appId, stamp)
          : await this.store.claim(plan.job, plan.source, this.service.appId, stamp);
        this.skew.check(plan, claim.dbNow, sentAt, Date.now());
      } catch (error) {
        if (!(error instanceof LockTablesMissingError)) throw error;
        // Migrated before the run history existed: the job runs under its locks as it did, until the migration.
        this.skips.warnMissingTables();
        return call();
      }
      if (claim.result !== 'claimed') return undefined;
      const startedAt = performance.now();
      try {
        const value = await call();
        end = { outcome: 'succeeded', error: null, durationMs: performance.now() - startedAt };
        return value;
      } catch (error) {
        // Not a failure of the job: the replica stops. The row stays `running`, and reads as `abandoned` once the
        // grant is released, as a run whose replica went away does.
        cutShort = isShutdownRefusal(error);
        const outcome = isLockLost(error) ? 'lock-lost' : 'failed';
        end = { outcome, error: nameOf(error), durationMs: performance.now() - startedAt };
        throw error;
      } finally {
        endedAt = performance.now();
        // Recorded while the grant is still held: the row is never seen `running` with its grant gone, unless the
        // replica died or stopped (abandoned) or the database was away (then written late).
        if (!cutShort) await this.recordEnd(plan, claim, stamp, end!, endedAt);
      }
    };
    let result: unknown;
    try {
      const waitMs = perReplica && !request ? perReplicaWaitMs(job, lock, plan) : lock.waitMs;
      result = await this.service.runLocked({
        target: job.label,
        lock: waitMs === lock.waitMs ? lock : { ...lock, waitMs },
        onUnavailable: lock.onUnavailable ?? 'skip',
        call: run,
      });
    } catch (error) {
      if (error instanceof LockNotAcquiredError) {
        // `onUnavailable: 'throw'`. A request stays `requested`: tried again at the next poll, quietly.
        if (request) return undefined;
        await this.skips.countBusy(plan);
      }
      if (isShutdownRefusal(error)) {
        // One debug line, whether the job's own locks or a lock the method asked for were refused: not an error.
        if (cutShort && claim !== undefined) {
          this.logger.debug(
            `${job.label} tick ${new Date(claim.tick).toISOString()} ended early: a lock it asked for was refused because ` +
              'the application is shutting down (its history shows the run abandoned)',
          );
        } else this.logger.debug(`Skipped a tick of ${job.label}: the application is shutting down`);
        return undefined;
      }
      if (claim?.result === 'claimed' && end?.outcome === 'succeeded' && error instanceof IllegalMonitorStateError) {
        // The method succeeded, but its grant was gone when it was released: lost while it ran.
        end = { ...end, outcome: 'lock-lost', error: error.name };
        await this.recordEnd(plan, claim, stamp, end, endedAt);
      }
      if (end !== undefined || !(error instanceof LockStoreError)) throw error;
      this.logger.error(`Skipped a tick of ${job.label}: ${error.message}`);
      return undefined;
    }
    if (claim === undefined) {
      // A request whose locks were busy stays `requested`: tried again at the next poll.
      if (end === undefined && stamp === 0 && !request) await this.skips.countBusy(plan);
      return result;
    }
    if (claim.result === 'paused') this.skips.paused(job, plan, claim.tick);
    else if (claim.result !== 'claimed' && !request) this.skips.skipped(job, plan, claim.tick, claim.result === 'busy' ? 'busy' : 'elsewhere');
    return result;
  }

  /**
   * Records the end of a claimed run, the job's next tick and the success. An end that cannot be written (the database
   * away) is kept and written late (`JobRunEndsWriter`).
   */
  private async recordEnd(plan: TickPlan, claim: TickClaim | undefined, stamp: number, end: RunEnd, endedAt: number): Promise<void> {
    if (claim?.result !== 'claimed') return;
    this.telemetry.jobRan(plan.job, end.outcome, plan.manual === true);
    const succeeded = end.outcome === 'succeeded';
    if (succeeded) this.successes.record(plan.job, endedAt);
    const registration: JobRegistration = { job: plan.job, schedule: plan.schedule, nextTick: plan.next(claim.tick) };
    try {
      await this.store.endRun(plan.job, claim.tick, stamp, end);
      await this.store.touchJob(registration, succeeded);
    } catch (error) {
      const tick = new Date(claim.tick).toISOString();
      this.logger.warn(`${plan.job}: could not record the end of tick ${tick} yet (retried): ${messageOf(error)}`);
      this.ends.add({ job: plan.job, schedule: plan.schedule, tick: claim.tick, stamp, end, endedAt });
    }
  }
}
