import {
  Inject,
  Injectable,
  Logger,
  Optional,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
} from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { LockConfigurationError } from '../errors/index.js';
import { RESOLVED_LOCK_OPTIONS, TASK_PREFIX } from '../lock.constants.js';
import { LockJobs } from '../jobs/lock-jobs.service.js';
import { InstanceLock } from '../services/instance-lock.service.js';
import { LockLeases } from '../services/lock-leases.service.js';
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
 * come from the options, which decorators could not know) and removes them at shutdown: the permits refresh, the
 * lease renewal, and the reaper (which also prunes the run history of scheduled jobs). Each task runs one at a time:
 * a slow database never piles up overlapping runs.
 * @internal
 */
@Injectable()
export class LockTasksRegistrar implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('LockModule');
  private readonly tasks: Task[];
  private readonly running = new Set<string>();

  constructor(
    permitsCache: LockPermitsCache,
    leases: LockLeases,
    instanceLock: InstanceLock,
    reaper: LockReaper,
    @Inject(RESOLVED_LOCK_OPTIONS) options: ResolvedLockOptions,
    jobs: LockJobs,
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

  onModuleDestroy(): void {
    for (const task of this.tasks) {
      if (this.registry?.doesExist('interval', task.name)) this.registry.deleteInterval(task.name);
    }
  }

  /** Runs `task` unless its previous run is still going (a slow database never piles up overlapping runs). */
  private async runOnce(task: Task): Promise<void> {
    if (this.running.has(task.name)) return;
    this.running.add(task.name);
    try {
      await task.run();
    } catch (error) {
      this.logger.error(`${task.name} failed: ${(error as Error).message}`);
    } finally {
      this.running.delete(task.name);
    }
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
