import { Inject, Injectable, Logger } from '@nestjs/common';
import { LockConfigurationError } from '../errors/index.js';
import { RESOLVED_LOCK_OPTIONS } from '../lock.constants.js';
import { LockStore } from '../store/lock.store.js';
import { LockTelemetry } from '../telemetry/lock-telemetry.service.js';
import type { ResolvedLockOptions } from '../utils/resolve-lock-options.util.js';
import { InstanceLock } from './instance-lock.service.js';
import { LockAcquisitions } from './lock-acquisitions.service.js';
import { LockLeases } from './lock-leases.service.js';
import { LockPermitsCache } from './lock-permits-cache.service.js';

/**
 * The start of `LockService`: checks the server, claims the `appId` (refusing to start next to a live twin), frees
 * what it left behind in a previous life when that life is provably over, loads the permits cache and starts the
 * gauges.
 * @internal
 */
@Injectable()
export class LockStartup {
  private readonly logger = new Logger('LockService');

  constructor(
    @Inject(LockStore) private readonly store: LockStore,
    private readonly instanceLock: InstanceLock,
    private readonly acquisitions: LockAcquisitions,
    private readonly leases: LockLeases,
    private readonly permitsCache: LockPermitsCache,
    private readonly telemetry: LockTelemetry,
    @Inject(RESOLVED_LOCK_OPTIONS) private readonly options: ResolvedLockOptions,
  ) {}

  /**
   * @throws LockConfigurationError when the server's settings or privileges keep grants from working.
   * @throws AppIdInUseError when a live twin holds the `appId`.
   */
  async start(): Promise<void> {
    const problems = await this.store.checkServer();
    if (problems.length > 0) throw new LockConfigurationError(problems.join(' '));
    const previousLifeOver = await this.instanceLock.claim();
    if (this.options.releaseOnStartup) await this.recoverPreviousLife(previousLifeOver);
    await this.permitsCache.refresh();
    const { leases, acquisitions, store } = this;
    this.telemetry.observe({ held: () => leases.size, waiters: () => acquisitions.waiting, retries: () => store.retries });
  }

  /**
   * Frees the grants of this `appId`'s previous life at once when it is provably over; otherwise (its process may
   * still run, its session having ended) leaves them to their leases: its watchdog tells it first, then a reaper.
   */
  private async recoverPreviousLife(provablyOver: boolean): Promise<void> {
    const { appId } = this.options;
    if (provablyOver) {
      const freed = await this.acquisitions.releaseAll();
      if (freed > 0) this.logger.warn(`Freed ${freed} lock row(s) left by a previous run of app "${appId}"`);
      return;
    }
    const left = await this.store.listGrants({ appId });
    if (left.length === 0) return;
    this.logger.warn(
      `${left.length} grant(s) of a previous run of app "${appId}" are left to their leases (at most ` +
        `${this.options.leaseMs} ms): its process cannot be proven gone from here (another machine or container, or ` +
        'a session that ended while it ran); a reaper frees them once their leases end',
    );
  }
}
