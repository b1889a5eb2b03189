import {
  Inject,
  Injectable,
  Logger,
  Optional,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
} from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { LockConfigurationError } from '../errors/index.js';
import { RESOLVED_LOCK_OPTIONS, TASK_PREFIX } from '../lock.constants.js';
import { LockJobs } from '../jobs/lock-jobs.service.js';
import { InstanceLock } from '../services/instance-lock.service.js';
import { LockLeases } from '../services/lock-leases.service.js';
import { LockedCallsTracker } from '../services/locked-calls.tracker.js';
import { LockPermitsCache } from '../services/lock-permits-cache.service.js';
import { LockReaper } from '../services/lock-reaper.service.js';
import type { ResolvedLockOptions } from '../utils/resolve-lock-options.util.js';

interface Task {
  readonly name: string;
  readonly every: number;
  readonly run: () => Promise<unknown>;
}

/**
 * Registers the library's periodic tasks with the application's `SchedulerRegistry` at bootstrap (their periods
 * come from the options, which decorators could not know): the permits refresh, the lease renewal, and the reaper
 * (which also prunes the run history of scheduled jobs). Each task runs one at a time: a slow database never piles
 * up overlapping runs.
 *
 * Shutdown has two steps. When `app.close()` begins (`onModuleDestroy`), the tasks leave the registry (the schedule
 * module clears it in the next phase), the holders that cannot be awaited as Promises are told (the signal of an
 * `acquireLocks` handle fires with `LockShutdownError`) and `shutdownGraceMs` starts, and only the lease renewal goes
 * on, on a timer of its own, for as long as the holders under way hold: their grants stay renewed and the app id stays
 * held. `stop()`, called once the last of them has ended, stops it and awaits the run in flight.
 * @internal
 */
@Injectable()
export class LockTasksRegistrar implements OnApplicationBootstrap, OnModuleDestroy, BeforeApplicationShutdown {
  private readonly logger = new Logger('LockModule');
  private readonly tasks: Task[];
  /** The run in flight of each task, by name. */
  private readonly running = new Map<string, Promise<void>>();
  private shutdownRenewal?: NodeJS.Timeout;

  constructor(
    permitsCache: LockPermitsCache,
    private readonly leases: LockLeases,
    private readonly instanceLock: InstanceLock,
    reaper: LockReaper,
    @Inject(RESOLVED_LOCK_OPTIONS) options: ResolvedLockOptions,
    jobs: LockJobs,
    private readonly calls: LockedCallsTracker,
    @Optional() private readonly registry?: SchedulerRegistry,
  ) {
    const prefix = `${TASK_PREFIX}:${options.appId}`;
    this.tasks = [
      {
        name: `${prefix}:permits-refresh`,
        every: options.permitsRefreshIntervalMs,
        run: async () => (await permitsCache.refresh()) && this.logger.log('Lock permits changed; cache swapped'),
      },
      {
        name: `${prefix}:lease-renewal`,
        every: options.renewIntervalMs,
        // Three independent steps: a database that refuses the app id's connection must not stop the renewal of the
        // leases, nor the retry of the releases that failed.
        run: () => settleAll([() => instanceLock.ensure(), () => leases.renew(), () => leases.retryReleases()]),
      },
      {
        name: `${prefix}:reaper`,
        every: options.reaperIntervalMs,
        run: async () => {
          await reaper.reapStale();
          await reaper.pruneLog();
          await jobs.prune();
        },
      },
    ].filter((task) => task.every > 0);
  }

  onApplicationBootstrap(): void {
    if (this.tasks.length === 0) return;
    if (!this.registry) {
      throw new LockConfigurationError(
        'LockModule runs its permits refresh, lease renewal and reaper with @nestjs/schedule: import ' +
          'ScheduleModule.forRoot() in your application module',
      );
    }
    for (const task of this.tasks) {
      this.registry.addInterval(task.name, setInterval(() => void this.runOnce(task), task.every));
    }
  }

  /**
   * Shutdown has begun: the holders are told; every task leaves the registry; the lease renewal goes on, on a timer of
   * its own.
   */
  onModuleDestroy(): void {
    this.calls.beginShutdown();
    for (const task of this.tasks) {
      if (this.registry?.doesExist('interval', task.name)) this.registry.deleteInterval(task.name);
    }
    const renewal = this.tasks.find((task) => task.name.endsWith(':lease-renewal'));
    if (renewal && !this.shutdownRenewal) {
      this.shutdownRenewal = setInterval(() => void this.runOnce(renewal), renewal.every);
      this.shutdownRenewal.unref(); // the calls it protects keep the process alive, not the renewal
    }
  }

  /**
   * Awaits the holders under way, so that each releases its locks while the DataSource is still open (TypeORM
   * destroys it in the next phase, `onApplicationShutdown`): the locked calls to their end; the live subscriptions and
   * `acquireLocks` handles within `shutdownGraceMs`, then ends and releases those still holding. Meanwhile their
   * leases are renewed and the app id stays held (a same-`appId` process is refused). Then the renewal stops; a grant
   * still held outside them (an imperative `tryLocks`) is reported lost to its holder (its rows stay until this `appId`
   * starts again, or its lease ends); and last the app id is given up.
   */
  async beforeApplicationShutdown(): Promise<void> {
    await Promise.all([this.calls.settled(), this.calls.holdersEnded()]);
    await this.calls.settled(); // any call begun meanwhile (reusing a grant of a holder)
    await this.stop();
    for (const stamp of this.leases.stamps()) {
      this.leases.lose(stamp, 'the application shut down while it was held: it is no longer renewed');
    }
    this.leases.stop();
    this.instanceLock.release();
  }

  /** Stops the lease renewal that `onModuleDestroy` kept going, and awaits every task run in flight. */
  async stop(): Promise<void> {
    clearInterval(this.shutdownRenewal);
    await Promise.allSettled([...this.running.values()]);
  }

  /** Runs `task` unless its previous run is still going (a slow database never piles up overlapping runs). */
  private runOnce(task: Task): Promise<void> {
    const inFlight = this.running.get(task.name);
    if (inFlight) return inFlight;
    const run = (async () => {
      try {
        await task.run();
      } catch (error) {
        this.logger.error(`${task.name} failed: ${(error as Error).message}`);
      } finally {
        this.running.delete(task.name);
      }
    })();
    this.running.set(task.name, run);
    return run;
  }
}

/** Runs every step, each after the previous one settled; rejects with the first failure once all have run. */
async function settleAll(steps: ReadonlyArray<() => Promise<unknown>>): Promise<void> {
  let failure: unknown;
  for (const step of steps) {
    try {
      await step();
    } catch (error) {
      failure ??= error;
    }
  }
  if (failure !== undefined) throw failure;
}
