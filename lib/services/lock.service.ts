import { type LockGrantHandle, OwnedLockGrant } from './lock-grant.handle.js';
import { Inject, Injectable, type OnApplicationShutdown, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { Observable } from 'rxjs';
import type { EntityManager } from 'typeorm';
import { LockLostError, NoFencedTransactionError } from '../errors/index.js';
import type {
  LockGrant,
  LockGrantFilter,
  LockHealth,
  LockLogEntry,
  LockMode,
  LockPermits,
  LockSpec,
  LockStats,
  ScheduledTickOptions,
  LockTransactionRunnerToken,
  TryLocksOptions,
  WithLocksOptions,
} from '../interfaces/index.js';
import { scheduledTick } from '../jobs/scheduled-tick.factory.js';
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
import { LockAcquisitions } from './lock-acquisitions.service.js';
import { LockDataSources } from './lock-data-sources.service.js';
import { LockHealthCheck } from './lock-health.service.js';
import { LockContext } from './lock-context.storage.js';
import { LockLeases } from './lock-leases.service.js';
import { LockPermitsCache } from './lock-permits-cache.service.js';
import { LockReaper } from './lock-reaper.service.js';
import { LockServiceHost } from './lock-service.host.js';
import { LockStartup } from './lock-startup.service.js';
import { LockTransactionContext } from './lock-transaction.storage.js';
import { LockTransactionRunners, runnerTokenName } from './lock-transaction-runners.service.js';
import type { LockedCall, LockHolder } from './lock-scope.js';
import { runLocked } from './locked-call.runner.js';
import { lockDeclaredObservable } from './locked-observable.runner.js';
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
  /** What `@WithLocks` calls through (and the key of this service's re-entrancy context). */
  private readonly holder: LockHolder = {
    tryLocks: (locks, options) => this.tryLocks(locks, options),
    releaseLocks: (stamp) => this.releaseLocks(stamp),
    isHeld: (stamp) => this.leases.isHeld(stamp),
    lossReason: (stamp) => this.leases.lossReason(stamp),
    busyLocks: (locks) => this.store.busyLocks(locks),
    dataSource: (name) => this.dataSources.get(name),
    transactionRunner: (target, transaction) => this.runners.forCall(target, transaction),
    markInLayer: (runner, tx, stamp) => this.runners.mark(runner, tx, stamp),
    fenceInLayer: (runner, tx, stamps) => this.runners.fence(runner, tx, stamps),
    fence: async (stamps, manager) => {
      for (const stamp of stamps) await this.markBusinessDone(stamp, manager);
    },
    awaitCommit: (stamps) => this.leases.awaitCommit(stamps),
    commitEnded: (stamps, outcome) => this.leases.commitEnded(stamps, outcome),
    hold: (holder, ended) => this.calls.hold(holder, ended),
  };

  /** @internal Nest's injector creates the service: inject `LockService`, never construct it. */
  constructor(
    @Inject(LockStore) private readonly store: LockStore,
    private readonly acquisitions: LockAcquisitions,
    private readonly startup: LockStartup,
    private readonly permitsCache: LockPermitsCache,
    private readonly leases: LockLeases,
    private readonly reaper: LockReaper,
    @Inject(RESOLVED_LOCK_OPTIONS) private readonly options: ResolvedLockOptions,
    private readonly health: LockHealthCheck,
    private readonly telemetry: LockTelemetry,
    private readonly dataSources: LockDataSources,
    private readonly calls: LockedCallsTracker,
    private readonly runners: LockTransactionRunners,
  ) {}

  /** The `appId` this service takes and releases locks for. */
  get appId(): string {
    return this.options.appId;
  }

  /**
   * Claims the `appId` (refusing to start next to a live twin), frees what it left behind in a previous life when that
   * life is provably over, then loads the permits cache (`LockStartup`). @internal
   */
  async onModuleInit(): Promise<void> {
    await this.startup.start();
    LockServiceHost.register(this);
  }

  /**
   * Ends every wait at once with `LockShutdownError` and awaits the removal of their waiter rows (the database is
   * still open at this stage); later acquisitions, waiting or not, are refused with the same error, so that no grant
   * starts that the calls awaited at shutdown (`LockTasksRegistrar.beforeApplicationShutdown`) would not include. @internal
   */
  async onModuleDestroy(): Promise<void> {
    await this.acquisitions.close();
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
   * @throws LockStoreError when the database fails (transient failures are retried first); `outcomeUnknown` is true
   *   when the group may have been granted all the same (nobody renews such a grant: it is freed within
   *   `leaseMs + reaperIntervalMs`). A wait goes on through transient failures (a restart, a lost connection) until
   *   its deadline (then it returns 0), and throws them only when an attempt's answer was lost and the database did
   *   not answer within 5 s past the deadline; a failure that will not pass by itself (a privilege revoked) ends it at
   *   once.
   * @throws AppIdInUseError when a twin took this instance's `appId` while it was disconnected (it grants nothing more).
   * @throws LockWaitAbortedError when `signal` cancels the wait (nothing is held).
   * @throws LockShutdownError when the application shuts down during the wait, or has begun to (`app.close()`):
   *   nothing is held.
   */
  async tryLocks(locks: Iterable<LockSpec>, options: TryLocksOptions = {}): Promise<number> {
    const group = parseLockGroup(locks);
    const { waitMs = 0, signal } = assertTryLocksOptions(options);
    return this.acquisitions.acquire(group, waitMs, signal);
  }

  /**
   * `tryLocks` with a handle that releases the group at the end of an `await using` block (or on `release()`). The
   * shutdown waits for a handle in use: its `signal` fires with `LockShutdownError` when `app.close()` begins, and
   * `close()` waits for its release up to `shutdownGraceMs`, then releases the group itself.
   * @returns the handle, or `undefined` when the group is not available (in time): `await using` accepts it.
   * @throws the errors of `tryLocks`.
   */
  acquireLocks(locks: Iterable<LockSpec>, options: TryLocksOptions = {}): Promise<LockGrantHandle | undefined> {
    // Tracked from its start: a grant landing after shutdown began is a holder the shutdown still waits for.
    return this.calls.starts(
      (async () => {
        const stamp = await this.tryLocks(locks, options);
        if (stamp === 0) return undefined;
        return new OwnedLockGrant(stamp, this.leases.signal(stamp), (s) => this.releaseLocks(s), this.holder.hold);
      })(),
    );
  }

  /**
   * Releases the group taken under `stamp` by this `appId`. A grant that already ended without its release is not an
   * error when its holder knows it: its fenced transaction committed (`LockFence`, `@WithLocks({ transaction })`) and
   * an operator, the reaper or a twin ended it after, or a fence threw its holder `LockLostError`: the release
   * resolves, so that a `finally` that releases never throws over the fenced call's outcome.
   * @throws InvalidLockArgumentError when `stamp` is not a positive safe integer (nothing is changed).
   * @throws IllegalMonitorStateError when no lock of this `appId` has that stamp and its holder was not told why:
   *   unknown, foreign, already released, or ended (reaped, recovered, forced) while this process believed it held
   *   (the work since may have run unprotected).
   * @throws LockStoreError when the database cannot be reached: the grant is no longer renewed and its release is
   *   made again in the background as soon as the database answers (from 5 ms after the failure, backing off to
   *   250 ms, and on every renewal tick); if the database stays away, its lease ends and any reaper frees it. Either way it is free within `leaseMs + reaperIntervalMs` once the database answers.
   */
  async releaseLocks(stamp: number): Promise<void> {
    assertStamp(stamp);
    await this.acquisitions.release(stamp);
  }

  /**
   * Frees every lock held under this `appId` (seed 000: run at start-up, after a crash). Runs automatically when the
   * module starts unless `releaseOnStartup` is false.
   * @returns the number of lock rows deleted.
   */
  releaseAllLocks(): Promise<number> {
    return this.acquisitions.releaseAll();
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
    const manager = LockTransactionContext.current(this.holder)?.manager;
    if (!manager) throw new NoFencedTransactionError();
    return manager;
  }

  /**
   * The transaction object of the fenced transaction the current call chain runs in, opened by `runner` (a
   * `@WithLocks({ transaction: { runner } })` method, or a call it awaits): Prisma's transaction client, Kysely's
   * `Transaction`, Knex's `Transaction`, a `pg` client, … as the runner hands it to its work. Every write through it
   * commits only if the grants are still held at the commit.
   * ```ts
   * const tx = this.locks.currentTransaction(PrismaLockTransactions); // Prisma.TransactionClient
   * ```
   * @param runner the token the decorator names (its type gives the transaction's).
   * @throws NoFencedTransactionError outside a fenced transaction of that runner, or once it has ended.
   */
  currentTransaction<Tx>(runner: LockTransactionRunnerToken<Tx>): Tx {
    const transaction = LockTransactionContext.current(this.holder);
    const source = transaction?.manager === undefined ? transaction?.source : undefined;
    if (!source || this.runners.get('currentTransaction()', runner) !== source) {
      throw new NoFencedTransactionError('currentTransaction(runner)', `transaction: { runner: ${runnerTokenName(runner)} }`);
    }
    return transaction!.tx as Tx;
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
      const reason = await this.leases.goneReason(stamp);
      this.leases.lose(stamp, `markBusinessDone found it gone: ${reason}`);
      throw new LockLostError(stamp, reason);
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

  /**
   * Wraps the callback of a job registered at run time (`SchedulerRegistry.addCronJob` / `addInterval`) so that each
   * call of the returned function is one tick of the job `job`: claimed once across the fleet under `options.locks`
   * and recorded in the run history, as a `@Cron` / `@Interval` method under `@WithLocks` is. Give `new CronJob` the
   * same `cron` and `timeZone` (or `setInterval` the same `intervalMs`): they name the ticks. The returned function
   * never rejects (the callback's error is logged, as the schedule module does); keep it to re-register the job after
   * deleting it. Call it after `LockModule` is initialised (in `onModuleInit` or later).
   *
   * ```ts
   * const tick = this.locks.scheduledTick('reports.rebuild', { cron: '0 *\/5 * * * *', locks: ['REPORTS_WRITE'] }, () => this.rebuild());
   * this.schedulerRegistry.addCronJob('reports.rebuild', new CronJob('0 *\/5 * * * *', tick));
   * ```
   * @param job the job's identity in the run history (1 to 200 characters), unique in the application.
   * @throws InvalidLockArgumentError / InvalidLockSpecError for invalid input, before any database call.
   * @throws LockConfigurationError when another scheduled job of the application has the identity `job`.
   */
  scheduledTick(job: string, options: ScheduledTickOptions, callback: () => unknown): () => Promise<void> {
    return scheduledTick(this, job, options, callback);
  }

  /** The engine behind `@WithLocks` and `withLocks`. @internal */
  runLocked<T>(locked: LockedCall<T>): Promise<unknown> {
    return this.calls.track(this.telemetry.traceLocked(locked.target, () => runLocked(this.holder, locked)));
  }

  /** The engine behind `@WithLocks` on a method declared to return an Observable: returns one at once. @internal */
  lockObservable(locked: LockedCall<unknown>): Observable<unknown> {
    return lockDeclaredObservable(this.holder, locked);
  }

  /** This instance's health (app id, database, migrations, renewals): see `LockHealth`. Never rejects, never hangs. */
  getHealth(): Promise<LockHealth> {
    return this.health.check(this.acquisitions.waiting);
  }

  /** Counters since start, for metrics and benchmarks. */
  getStats(): LockStats {
    return this.acquisitions.stats();
  }
}
