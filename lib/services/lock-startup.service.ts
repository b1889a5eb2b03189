import { Inject, Injectable, Logger } from '@nestjs/common';
import { AppIdInUseError, LockConfigurationError } from '../errors/index.js';
import { RESOLVED_LOCK_OPTIONS } from '../lock.constants.js';
import { LockStore } from '../store/lock.store.js';
import { LockTelemetry } from '../telemetry/lock-telemetry.service.js';
import type { ResolvedLockOptions } from '../utils/resolve-lock-options.util.js';
import { retryingStartup } from '../utils/startup-retry.util.js';
import { InstanceLock } from './instance-lock.service.js';
import { LockAcquisitions } from './lock-acquisitions.service.js';
import { LockLeases } from './lock-leases.service.js';
import { LockPermitsCache } from './lock-permits-cache.service.js';

/** Claims refused by a "twin" tried again after a transient failure of the claim (a session of its own, exiting). */
const TWIN_CHECKS_AFTER_FAULT = 3;

/**
 * The start of `LockService`: checks the server, claims the `appId` (refusing to start next to a live twin), frees
 * what it left behind in a previous life when that life is provably over, loads the permits cache and starts the
 * gauges. Each step is tried again through transient failures (`isTransientStoreFault`: the database restarting, a
 * terminated backend, a read-only server) until `startupTimeoutMs` has passed since start-up began; a configuration
 * error fails at once.
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
   * @throws LockStartupTimeoutError when transient failures lasted past `startupTimeoutMs`.
   */
  async start(): Promise<void> {
    const deadline = performance.now() + this.options.startupTimeoutMs;
    // Its connection attempts (the pooler check, directUrl's pool) wait at most for what is left of the budget.
    const problems = await this.retrying('the server check', deadline, (ms) => this.store.checkServer(ms));
    if (problems.length > 0) throw new LockConfigurationError(problems.join(' '));
    // A claim session of this start-up that broke may hold the app id a moment longer (a terminated backend keeps its
    // locks while it exits): after a transient failure, a "twin" is asked again a few times before it counts.
    let twinChecks = 0;
    const previousLifeOver = await this.retrying(
      'the app id claim',
      deadline,
      () => this.instanceLock.claim(),
      (error) => error instanceof AppIdInUseError && ++twinChecks <= TWIN_CHECKS_AFTER_FAULT,
    );
    if (this.options.releaseOnStartup) {
      await this.retrying('the recovery of a previous life', deadline, () => this.recoverPreviousLife(previousLifeOver));
    }
    await this.retrying('the permits cache', deadline, () => this.permitsCache.refresh());
    const { leases, acquisitions, store } = this;
    this.telemetry.observe({ held: () => leases.size, waiters: () => acquisitions.waiting, retries: () => store.retries });
  }

  /** Runs one step of start-up through transient failures until `deadline` (`retryingStartup`). */
  private retrying<T>(
    what: string,
    deadline: number,
    step: (attemptMs: number) => Promise<T>,
    afterFault?: (error: unknown) => boolean,
  ): Promise<T> {
    const { startupTimeoutMs, queryTimeoutMs: maxAttemptMs } = this.options;
    return retryingStartup({ what, deadline, startupTimeoutMs, maxAttemptMs, logger: this.logger }, step, afterFault);
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
