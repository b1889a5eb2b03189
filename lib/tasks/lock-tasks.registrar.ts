import {
  Inject,
  Injectable,
  Logger,
  Optional,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { LockConfigurationError } from '../errors/index.js';
import { PERMITS_REFRESH_TASK, RESOLVED_LOCK_OPTIONS } from '../lock.constants.js';
import { LockPermitsCache } from '../services/lock-permits-cache.service.js';
import type { ResolvedLockOptions } from '../utils/resolve-lock-options.util.js';

/**
 * Registers the library's periodic tasks with the application's `SchedulerRegistry` at bootstrap (their periods
 * come from the options, which decorators could not know) and removes them at shutdown.
 * @internal
 */
@Injectable()
export class LockTasksRegistrar implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('LockModule');
  private readonly taskName: string;
  private refreshing = false;

  constructor(
    private readonly permitsCache: LockPermitsCache,
    @Inject(RESOLVED_LOCK_OPTIONS) private readonly options: ResolvedLockOptions,
    @Optional() private readonly registry?: SchedulerRegistry,
  ) {
    this.taskName = `${PERMITS_REFRESH_TASK}:${options.appId}`;
  }

  onApplicationBootstrap(): void {
    const every = this.options.permitsRefreshIntervalMs;
    if (every === 0) return;
    if (!this.registry) {
      throw new LockConfigurationError(
        'LockModule refreshes permits with @nestjs/schedule: import ScheduleModule.forRoot() in your application ' +
          'module, or set permitsRefreshIntervalMs: 0',
      );
    }
    this.registry.addInterval(this.taskName, setInterval(() => void this.refreshPermits(), every));
  }

  onApplicationShutdown(): void {
    if (this.registry?.doesExist('interval', this.taskName)) this.registry.deleteInterval(this.taskName);
  }

  /** One refresh at a time: a slow database must not pile up overlapping refreshes. */
  private async refreshPermits(): Promise<void> {
    if (this.refreshing) return;
    this.refreshing = true;
    try {
      if (await this.permitsCache.refresh()) this.logger.log('Lock permits changed; cache swapped');
    } catch (error) {
      this.logger.error(`Lock permits refresh failed: ${(error as Error).message}`);
    } finally {
      this.refreshing = false;
    }
  }
}
