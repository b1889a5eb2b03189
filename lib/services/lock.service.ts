import { type LockGrantHandle, OwnedLockGrant } from './lock-grant.handle.js';
import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationShutdown,
  type OnModuleDestroy,
  type OnModuleInit,
} from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import {
  IllegalMonitorStateError,
  LockConfigurationError,
  LockLostError,
  NoFencedTransactionError,
  LockShutdownError,
  LockWaitAbortedError,
} from '../errors/index.js';
import type {
  LockGrant,
  LockGrantFilter,
  LockHealth,
  LockRequest,
  LockLogEntry,
  LockMode,
  LockPermits,
  LockSpec,
  LockStats,
  TryLocksOptions,
  WithLocksOptions,
} from '../interfaces/index.js';
import { RESOLVED_LOCK_OPTIONS } from '../lock.constants.js';
import { LockStore } from '../store/lock.store.js';
import { LockTelemetry } from '../telemetry/lock-telemetry.service.js';
import {
  assertLimit,
  assertLockMode,
  assertLockName,
  assertPermits,
  assertInTransaction,
  assertGrantFilter,
  assertStamp,
  assertTryLocksOptions,
} from '../utils/lock-validation.util.js';
import { parseLockGroup } from '../utils/parse-lock-spec.util.js';
import { resolveWithLocks } from '../utils/resolve-with-locks-options.util.js';
import type { ResolvedLockOptions } from '../utils/resolve-lock-options.util.js';
import { InstanceLock } from './instance-lock.service.js';
import { LockDataSources } from './lock-data-sources.service.js';
import { LockHealthCheck } from './lock-health.service.js';
import { LockContext } from './lock-context.storage.js';
import { LockLeases } from './lock-leases.service.js';
import { LockPermitsCache } from './lock-permits-cache.service.js';
import { LockNotifications } from './lock-notifications.service.js';
import { LockReaper } from './lock-reaper.service.js';
import { LockOutcomes } from './lock-outcomes.ledger.js';
import { waitForGroup } from './lock-waiter.js';
import { LockServiceHost } from './lock-service.host.js';
import { LockTransactionContext } from './lock-transaction.storage.js';
import type { LockedCall, LockHolder } from './lock-scope.js';
import { runLocked } from './locked-call.runner.js';
import { LockedCallsTracker } from './locked-calls.tracker.js';

/**
 * Named read/write locks with permits, kept in the shared PostgreSQL database (seed 000's API).
 *
 * Every method validates its input before touching the database and throws a typed `LockError` on failure; no raw
 * driver error reaches the caller.
 * @publicApi
 */
@Injectable()
export class LockService implements OnModuleInit, OnModuleDestroy, OnApplicationShutdown {
  private readonly logger = new Logger('LockService');
  private granted = 0;
  private busy = 0;
  private released = 0;
  /** Aborted when the application shuts down: ends every wait. */
  private readonly closing = new AbortController();
  /** The waits under way, so that shutdown can await their clean-up. */
  private readonly waits = new Set<Promise<number>>();
  /** The attempts of this service, to resolve one whose outcome is unknown. */
  private readonly outcomes: LockOutcomes;
  /** What `@WithLocks` calls through (and the key of this service's re-entrancy context). */
  private readonly holder: LockHolder = {
    tryLocks: (locks, options) => this.tryLocks(locks, options),
    releaseLocks: (stamp) => this.releaseLocks(stamp),
    isHeld: (stamp) => this.leases.isHeld(stamp),
    busyLocks: (locks) => this.store.busyLocks(locks),
    dataSource: (name) => this.dataSources.get(name),
    fence: async (stamps, manager) => {
      for (const stamp of stamps) await this.markBusinessDone(stamp, manager);
    },
  };

  /** @internal Nest's injector creates the service: inject `LockService`, never construct it. */
  constructor(
    @Inject(LockStore) private readonly store: LockStore,
    private readonly permitsCache: LockPermitsCache,
    private readonly leases: LockLeases,
    private readonly instanceLock: InstanceLock,
    private readonly reaper: LockReaper,
    private readonly notifications: LockNotifications,
    @Inject(RESOLVED_LOCK_OPTIONS) private readonly options: ResolvedLockOptions,
    private readonly health: LockHealthCheck,
    private readonly telemetry: LockTelemetry,
    private readonly dataSources: LockDataSources,
    private readonly calls: LockedCallsTracker,
  ) {
    this.outcomes = new LockOutcomes(store, leases, options);
  }

  /** The `appId` this service takes and releases locks for. */
  get appId(): string {
    return this.options.appId;
  }

  /**
   * Claims the `appId` (refusing to start next to a live twin), frees what it left behind in a previous life when that
   * life is provably over, then loads the permits cache. @internal
   */
  async onModuleInit(): Promise<void> {
    const problems = await this.store.checkServer();
    if (problems.length > 0) throw new LockConfigurationError(problems.join(' '));
    const previousLifeOver = await this.instanceLock.claim();
    if (this.options.releaseOnStartup) await this.recoverPreviousLife(previousLifeOver);
    await this.permitsCache.refresh();
    const { leases, waits, store } = this;
    this.telemetry.observe({ held: () => leases.size, waiters: () => waits.size, retries: () => store.retries });
    LockServiceHost.register(this);
  }

  /**
   * Frees the grants of this `appId`'s previous life at once when it is provably over; otherwise (its process may
   * still run, its session having ended) leaves them to their leases: its watchdog tells it first, then a reaper.
   */
  private async recoverPreviousLife(provablyOver: boolean): Promise<void> {
    if (provablyOver) {
      const freed = await this.releaseAllLocks();
      if (freed > 0) this.logger.warn(`Freed ${freed} lock row(s) left by a previous run of app "${this.appId}"`);
      return;
    }
    const left = await this.store.listGrants({ appId: this.appId });
    if (left.length === 0) return;
    this.logger.warn(
      `${left.length} grant(s) of a previous run of app "${this.appId}" are left to their leases (at most ` +
        `${this.options.leaseMs} ms): its process cannot be proven gone from here (another machine or container, or ` +
        'a session that ended while it ran); a reaper frees them once their leases end',
    );
  }

  /**
   * Ends every wait at once with `LockShutdownError` and awaits the removal of their waiter rows (the database is
   * still open at this stage); later acquisitions, waiting or not, are refused with the same error, so that no grant
   * starts that the calls awaited at shutdown (`LockTasksRegistrar.beforeApplicationShutdown`) would not include. @internal
   */
  async onModuleDestroy(): Promise<void> {
    this.closing.abort(new LockShutdownError());
    await Promise.allSettled([...this.waits]);
  }

  /** @internal */
  onApplicationShutdown(): void {
    LockServiceHost.unregister(this);
  }

  /**
   * Takes the whole group or nothing; by default without waiting.
   * @param locks an array or Set of specs, e.g. `['WS2_WRITE', 'WS1_READ']`
   * @param options `waitMs` to wait for the group up to a deadline (woken by the database's notifications), and a
   *   `signal` to cancel the wait.
   * @returns the group's stamp (a positive integer, unique for the life of the tables), or `0` when some lock of the
   *   group is not available.
   * @throws InvalidLockSpecError before any database call, for a bad spec or group.
   * @throws LockStoreError when the database fails (transient failures are retried first, and a wait goes on through
   *   failures that granted nothing); `outcomeUnknown` is true when the group may have been granted all the same
   *   (nobody renews such a grant: it is freed within `leaseMs + reaperIntervalMs`).
   * @throws AppIdInUseError when a twin took this instance's `appId` while it was disconnected (it grants nothing more).
   * @throws LockWaitAbortedError when `signal` cancels the wait (nothing is held).
   * @throws LockShutdownError when the application shuts down during the wait, or has begun to (`app.close()`):
   *   nothing is held.
   */
  async tryLocks(locks: Iterable<LockSpec>, options: TryLocksOptions = {}): Promise<number> {
    const group = parseLockGroup(locks);
    const { waitMs = 0, signal } = assertTryLocksOptions(options);
    if (signal?.aborted) throw new LockWaitAbortedError(signal.reason);
    // Once shutdown has begun, a new grant could outlive the DataSource: the calls under way are awaited, not this one.
    if (this.closing.signal.aborted) throw new LockShutdownError();
    let sentAt = 0;
    const attempt = async (waiter?: string): Promise<number> => {
      // An instance that does not hold its app id grants nothing: it takes it back first (or learns it was fenced).
      if (!this.instanceLock.held) await this.instanceLock.ensure();
      // The lease is counted from the moment the granting statement is sent: before the database's own start of it.
      sentAt = LockLeases.now();
      return this.outcomes.track(this.store.tryAcquire(group, waiter));
    };
    // A waiter whose attempt's outcome is unknown looks for the grant it may have got (see `LockOutcomes`).
    const resolve = async (since: number): Promise<number> => {
      if (!this.instanceLock.held) await this.instanceLock.ensure();
      const found = await this.outcomes.resolve(group, since);
      if (found) sentAt = found.sentAt;
      return found?.stamp ?? 0;
    };
    const trace = this.telemetry.acquiring(group, waitMs);
    let stamp: number;
    try {
      stamp = waitMs > 0 ? await this.waitFor(group, waitMs, signal, attempt, resolve) : await attempt();
    } catch (error) {
      throw trace.failed(error);
    }
    if (stamp > 0) {
      this.granted++;
      this.leases.track(stamp, sentAt);
    } else {
      this.busy++;
    }
    trace.ended(stamp);
    return stamp;
  }

  /**
   * `tryLocks` with a handle that releases the group at the end of an `await using` block (or on `release()`).
   * @returns the handle, or `undefined` when the group is not available (in time): `await using` accepts it.
   * @throws the errors of `tryLocks`.
   */
  async acquireLocks(locks: Iterable<LockSpec>, options: TryLocksOptions = {}): Promise<LockGrantHandle | undefined> {
    const stamp = await this.tryLocks(locks, options);
    return stamp > 0 ? new OwnedLockGrant(stamp, this.leases.signal(stamp), (s) => this.releaseLocks(s)) : undefined;
  }

  /** Waits for `group` (see `waitForGroup`), tracked so that shutdown ends it. */
  private waitFor(
    group: readonly LockRequest[],
    waitMs: number,
    signal: AbortSignal | undefined,
    attempt: (waiter: string) => Promise<number>,
    resolve: (since: number) => Promise<number>,
  ): Promise<number> {
    const { store, notifications } = this;
    const context = { store, attempt, resolve, notifications, recheckMs: this.options.waitRecheckMs };
    const stop = signal ? AbortSignal.any([signal, this.closing.signal]) : this.closing.signal;
    const waiting = waitForGroup(context, group, Date.now() + waitMs, stop);
    this.waits.add(waiting);
    const forget = () => void this.waits.delete(waiting);
    waiting.then(forget, forget);
    return waiting;
  }

  /**
   * Releases the group taken under `stamp` by this `appId`.
   * @throws InvalidLockArgumentError when `stamp` is not a positive safe integer (nothing is changed).
   * @throws IllegalMonitorStateError when no lock of this `appId` has that stamp (unknown, foreign, already
   *   released or recovered).
   * @throws LockStoreError when the database cannot be reached: the grant is no longer renewed and its release is
   *   retried in the background on every renewal tick; if the database stays away, its lease ends and any reaper
   *   frees it. Either way it is free within `leaseMs + reaperIntervalMs` once the database answers.
   */
  async releaseLocks(stamp: number): Promise<void> {
    assertStamp(stamp);
    this.leases.beginRelease(stamp);
    const trace = this.telemetry.releasing(stamp);
    let found: boolean;
    try {
      found = await this.store.release(stamp);
    } catch (error) {
      this.leases.releaseLater(stamp);
      throw trace.failed(error);
    }
    if (!found) {
      this.leases.lose(stamp, 'releaseLocks found it gone');
      throw trace.failed(new IllegalMonitorStateError(stamp, this.options.appId));
    }
    this.leases.forget(stamp);
    this.released++;
    trace.ended();
  }

  /**
   * Frees every lock held under this `appId` (seed 000: run at start-up, after a crash). Runs automatically when the
   * module starts unless `releaseOnStartup` is false.
   * @returns the number of lock rows deleted.
   */
  async releaseAllLocks(): Promise<number> {
    const freed = await this.store.recover();
    this.telemetry.recovered(freed);
    this.leases.loseAll('releaseAllLocks freed every lock of this app');
    return freed;
  }

  /** Whether this process still holds `stamp`, as far as its lease renewals know. */
  isHeld(stamp: number): boolean {
    assertStamp(stamp);
    return this.leases.isHeld(stamp);
  }

  /**
   * An `AbortSignal` that fires (with a `LockLostError` as reason) when the grant is known to be lost: its lease
   * expired and it was reaped, recovery freed it, or this instance lost its app id. Already aborted for a stamp this
   * process does not hold.
   */
  getSignal(stamp: number): AbortSignal {
    assertStamp(stamp);
    return this.leases.signal(stamp);
  }

  /**
   * The grant of the innermost `@WithLocks` method (or `withLocks` callback) of the current call chain that is still
   * running: its stamp (for `markBusinessDone` and fencing) and its signal (aborted if the grant was lost);
   * `undefined` outside one, and in work that outlives the grant (a timer or a promise the method did not await,
   * once the method and the calls reusing its grant have settled).
   */
  currentLock():
    | {
        /** The grant's stamp. */
        readonly stamp: number;
        /** Fires, with a `LockLostError` as its reason, when the grant is lost. */
        readonly signal: AbortSignal;
      }
    | undefined {
    const stamp = LockContext.current(this.holder)?.stamp;
    return stamp === undefined ? undefined : { stamp, signal: this.leases.signal(stamp) };
  }

  /**
   * The `EntityManager` of the fenced transaction the current call chain runs in (a `@WithLocks({ transaction })`
   * method, or a call it awaits): every write through it commits only if the grants are still held at the commit.
   * @throws NoFencedTransactionError outside a fenced transaction, or once it has ended.
   */
  currentManager(): EntityManager {
    const transaction = LockTransactionContext.current(this.holder);
    if (!transaction) throw new NoFencedTransactionError();
    return transaction.manager;
  }

  /**
   * "Business done": call it inside your business transaction, with that transaction's `EntityManager` (fenced
   * transactions of `@WithLocks({ transaction })` do it for you). It marks the grant's log row BUSINESS_DONE only if
   * the grant still exists and its lease has not expired (database clock); otherwise it throws `LockLostError`, so
   * your transaction rolls back. Once it has run, the reaper cannot free the grant until your transaction ends.
   * @throws LockLostError
   */
  async markBusinessDone(stamp: number, manager: EntityManager): Promise<void> {
    assertStamp(stamp);
    assertInTransaction(manager);
    if (!(await this.store.markBusinessDone(stamp, manager))) {
      this.leases.lose(stamp, 'markBusinessDone found it reaped, released or expired');
      throw new LockLostError(stamp, 'the grant was reaped, released or its lease expired');
    }
  }

  /**
   * The fencing token of a grant, for guarding writes to stores outside this database: it is the stamp, which
   * increases strictly with every grant (a database sequence), so every later write grant of any name carries a
   * larger token, across restarts. A store that remembers the largest token it accepted refuses stale holders.
   */
  getFencingToken(stamp: number): number {
    assertStamp(stamp);
    return stamp;
  }

  /** Frees stale grants of any instance now (the reaper task does it on its interval); returns how many. */
  reapStaleLocks(): Promise<number> {
    return this.reaper.reapStale();
  }

  /** Every grant holding locks now, across all instances (for dashboards), oldest first; `filter` narrows it. */
  getGrants(filter: LockGrantFilter = {}): Promise<LockGrant[]> {
    return this.store.listGrants(assertGrantFilter(filter));
  }

  /** The newest lock log rows, newest first. */
  getLog(limit = 50): Promise<LockLogEntry[]> {
    assertLimit(limit);
    return this.store.listLog(limit);
  }

  /** Reloads the permits cache from `locking_permissions` now (it also refreshes on its interval). */
  async refreshLockPermits(): Promise<void> {
    await this.permitsCache.refresh();
  }

  /**
   * The permits in force for `name` according to the cache (`defaultPermits` where the table has no row).
   * @throws InvalidLockSpecError for a bad name.
   */
  getLockPermits(name: string): LockPermits {
    assertLockName(name);
    return this.permitsCache.get(name);
  }

  /**
   * Writes the permits of one (name, mode) to `locking_permissions`, or deletes the row with `null` so that
   * `defaultPermits` apply again; then refreshes this node's cache. Other nodes pick it up on their next refresh, but
   * grants everywhere obey it from the moment it commits.
   * @throws InvalidLockSpecError / InvalidLockArgumentError before any database call.
   */
  async setLockPermits(name: string, mode: LockMode, permits: number | null): Promise<void> {
    assertLockName(name);
    assertLockMode(mode);
    if (permits !== null) assertPermits(permits);
    await this.store.savePermits(name, mode, permits);
    await this.permitsCache.refresh();
  }

  /**
   * Runs `fn` holding the group, the programmatic form of `@WithLocks`: the locks are taken before `fn` runs and
   * released (awaited) when its Promise settles. Re-entrant within one async call chain, for as long as the grant it
   * reuses is held.
   * @returns what `fn` returns, or `undefined` when the group is not available and `onUnavailable` is `'skip'`.
   * @throws LockNotAcquiredError when the group is not available (default `onUnavailable: 'throw'`).
   * @throws LockUpgradeError when the chain holds a name for read and `locks` asks for it for write.
   */
  async withLocks<T>(locks: readonly LockSpec[] | WithLocksOptions, fn: () => Promise<T> | T): Promise<T | undefined> {
    const lock = resolveWithLocks(Array.isArray(locks) ? locks : [locks]);
    return (await this.runLocked({
      target: fn.name || 'LockService.withLocks',
      lock: lock.forCall([]),
      onUnavailable: lock.onUnavailable ?? 'throw',
      call: fn,
    })) as T | undefined;
  }

  /** The engine behind `@WithLocks` and `withLocks`. @internal */
  runLocked<T>(locked: LockedCall<T>): Promise<unknown> {
    return this.calls.track(this.telemetry.traceLocked(locked.target, () => runLocked(this.holder, locked)));
  }

  /** This instance's health (app id, database, migrations, renewals): see `LockHealth`. Never rejects, never hangs. */
  getHealth(): Promise<LockHealth> {
    return this.health.check(this.waits.size);
  }

  /** Counters since start, for metrics and benchmarks. */
  getStats(): LockStats {
    return { granted: this.granted, busy: this.busy, released: this.released, retries: this.store.retries };
  }
}
