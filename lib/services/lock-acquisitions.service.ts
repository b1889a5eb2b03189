import { Inject, Injectable } from '@nestjs/common';
import { setMaxListeners } from 'node:events';
import {
  IllegalMonitorStateError,
  LockConfigurationError,
  LockShutdownError,
  LockStoreError,
  LockWaitAbortedError,
} from '../errors/index.js';
import type { LockRequest, LockStats } from '../interfaces/index.js';
import { RESOLVED_LOCK_OPTIONS } from '../lock.constants.js';
import { LockStore } from '../store/lock.store.js';
import { LockTelemetry } from '../telemetry/lock-telemetry.service.js';
import type { ResolvedLockOptions } from '../utils/resolve-lock-options.util.js';
import { InstanceLock } from './instance-lock.service.js';
import { LockLeases } from './lock-leases.service.js';
import { LockNotifications } from './lock-notifications.service.js';
import { LockOutcomes } from './lock-outcomes.ledger.js';
import { LockRefusals } from './lock-refusals.tracker.js';
import { waitForGroup, type WaitContext } from './lock-waiter.js';
import { bounded, NEVER } from '../utils/wait-timing.util.js';

/**
 * How long `close()` awaits the removal of the rows of the waits it ends, in all (the database is still open then): a
 * pool kept busy by the application, or a database away, does not hold the shutdown up beyond this.
 */
const CLOSE_CLEANUP_MS = 1000;

/** The key of a waiter's rows in `LockLeases.retries`. */
const WAITER_KEY = 'waiter:';

/**
 * Grants and releases of validated groups and stamps, for `LockService`: the instance lock checked first, the lease
 * tracked from the moment the granting statement is sent, waits tracked so that shutdown ends them, and the counters
 * of `getStats()`.
 * @internal
 */
@Injectable()
export class LockAcquisitions {
  private granted = 0;
  private busy = 0;
  private released = 0;
  /** Aborted when the application shuts down: ends every wait. */
  private readonly closing = new AbortController();
  /** The waits under way, so that shutdown can await their clean-up. */
  private readonly waits = new Set<Promise<number>>();
  /** The removals of waiter rows under way (also those a wait did not await), so that shutdown can await them. */
  private readonly cleanups = new Set<Promise<void>>();
  /** The attempts of this service, to resolve one whose outcome is unknown. */
  private readonly outcomes: LockOutcomes;
  /** The acquisitions the configuration refused, for the health check. */
  readonly refusals = new LockRefusals();

  constructor(
    @Inject(LockStore) private readonly store: LockStore,
    private readonly leases: LockLeases,
    private readonly instanceLock: InstanceLock,
    private readonly notifications: LockNotifications,
    @Inject(RESOLVED_LOCK_OPTIONS) private readonly options: ResolvedLockOptions,
    private readonly telemetry: LockTelemetry,
  ) {
    this.outcomes = new LockOutcomes(store, leases, options);
    setMaxListeners(Infinity, this.closing.signal); // one listener per wait under way
  }

  /** How many waits are under way. */
  get waiting(): number {
    return this.waits.size;
  }

  /**
   * Takes the validated `group` (see `LockService.tryLocks`), waiting up to `waitMs` when it is positive. `unbounded`:
   * a leader's grant, which `maxHoldMs` does not bound (see `LockLeases.track`).
   */
  async acquire(group: readonly LockRequest[], waitMs: number, signal: AbortSignal | undefined, unbounded = false): Promise<number> {
    if (signal?.aborted) throw new LockWaitAbortedError(signal.reason);
    // Once shutdown has begun, a new grant could outlive the DataSource: the calls under way are awaited, not this one.
    if (this.closing.signal.aborted) throw new LockShutdownError();
    let sentAt = 0;
    const leaseMs = this.leases.startLeaseMs(unbounded);
    const attempt = async (waiter?: string): Promise<number> => {
      // An instance that does not hold its app id grants nothing: it takes it back first (or learns it was fenced).
      if (!this.instanceLock.held) await this.ensureInstanceLock();
      // The lease is counted from the moment the granting statement is sent: before the database's own start of it.
      sentAt = LockLeases.now();
      return this.outcomes.track(this.store.tryAcquire(group, waiter, leaseMs));
    };
    // A waiter whose attempt's outcome is unknown looks for the grant it may have got (see `LockOutcomes`).
    const resolve = async (since: number): Promise<number> => {
      if (!this.instanceLock.held) await this.instanceLock.ensure();
      const found = await this.outcomes.resolve(group, since, leaseMs);
      if (found) sentAt = found.sentAt;
      return found?.stamp ?? 0;
    };
    // A grant a release handed over: its lease ends when the waiter's rows did then, `ttlMs` after the last refresh
    // the database answered (sent at `refreshSentAt`), unless the grant's own lease is shorter.
    let handedOverLeaseMs: number | undefined;
    const handedOver = (refreshSentAt: number, ttlMs: number) => {
      sentAt = refreshSentAt;
      handedOverLeaseMs = Math.min(ttlMs, leaseMs);
    };
    const trace = this.telemetry.acquiring(group, waitMs);
    let stamp: number;
    try {
      stamp = waitMs > 0 ? await this.waitFor(group, { waitMs, leaseMs }, signal, { attempt, resolve, handedOver }) : await attempt();
    } catch (error) {
      if (error instanceof LockConfigurationError) this.refusals.refused(error);
      throw trace.failed(error);
    }
    this.refusals.answered();
    if (stamp > 0) {
      this.granted++;
      this.leases.track(stamp, sentAt, unbounded, handedOverLeaseMs);
    } else {
      this.busy++;
    }
    trace.ended(stamp);
    return stamp;
  }

  /** Waits for `group` (see `waitForGroup`) up to `waitMs`, for a grant starting with `leaseMs`, tracked so that shutdown ends it. */
  private waitFor(
    group: readonly LockRequest[],
    { waitMs, leaseMs }: { readonly waitMs: number; readonly leaseMs: number },
    signal: AbortSignal | undefined,
    steps: Pick<WaitContext, 'attempt' | 'resolve' | 'handedOver'>,
  ): Promise<number> {
    const { store, notifications } = this;
    const { waitRecheckMs: recheckMs, waiterTtlMs: ttlMs } = this.options;
    const cleanUp = (waiter: string, after: Promise<unknown>, keep?: number) => this.removeWaiter(waiter, after, keep);
    const context: WaitContext = { ...steps, store, notifications, recheckMs, ttlMs, leaseMs, cleanUp };
    const stop = signal ? AbortSignal.any([signal, this.closing.signal]) : this.closing.signal;
    const waiting = waitForGroup(context, group, Date.now() + waitMs, stop);
    this.waits.add(waiting);
    const forget = () => void this.waits.delete(waiting);
    waiting.then(forget, forget);
    return waiting;
  }

  /**
   * Takes the app id back (see `InstanceLock.ensure`) before an attempt. No acquisition was sent when it fails: a
   * store error is one of known outcome, whatever the claim's own statements left unknown.
   */
  private async ensureInstanceLock(): Promise<void> {
    try {
      await this.instanceLock.ensure();
    } catch (error) {
      if (!(error instanceof LockStoreError) || !error.outcomeUnknown) throw error;
      throw new LockStoreError(error.operation, error.code, false, error.cause);
    }
  }

  /**
   * Removes `waiter`'s rows once `after` has settled; a removal that fails is queued in `LockLeases.retries`, made
   * again as soon as the database answers. A grant a release handed the waiter meanwhile is released, unless it is
   * `keep` (the wait took it). Never rejects.
   */
  private removeWaiter(waiter: string, after: Promise<unknown>, keep?: number): Promise<void> {
    const remove = async () => {
      const granted = await this.store.unregisterWaiter(waiter);
      // Nobody holds it: should this release fail, its short lease ends and the next attempt on the name reaps it.
      if (granted > 0 && granted !== keep) await this.store.release(granted).catch(() => undefined);
    };
    const removal = after.then(remove).then(
      () => undefined,
      () => this.leases.retries.add(WAITER_KEY + waiter, remove),
    );
    this.cleanups.add(removal);
    void removal.then(() => this.cleanups.delete(removal));
    return removal;
  }

  /** Releases the validated `stamp` (see `LockService.releaseLocks`). */
  async release(stamp: number): Promise<void> {
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
      const reason = await this.leases.goneReason(stamp);
      // Its fenced transaction committed, or a fenced call told its holder it was lost: the release has nothing to say
      // (a finally that releases must not throw over the outcome). Otherwise this is the news: the work may have run
      // unprotected, or the stamp was never this holder's (foreign, unknown, released twice).
      const told = this.leases.endWasTold(stamp);
      this.leases.lose(stamp, `releaseLocks found it gone: ${reason}`);
      this.leases.forget(stamp);
      if (told) {
        trace.ended();
        return;
      }
      throw trace.failed(new IllegalMonitorStateError(stamp, this.options.appId, reason));
    }
    this.leases.forget(stamp);
    this.released++;
    trace.ended();
  }

  /** Frees every lock of this `appId`; every grant this process tracked is lost. Returns the lock rows freed. */
  async releaseAll(): Promise<number> {
    const freed = await this.store.recover();
    this.telemetry.recovered(freed);
    this.leases.loseAll('releaseAllLocks freed every lock of this app');
    return freed;
  }

  /**
   * Ends every wait at once with `LockShutdownError` and awaits their end and the removal of their waiter rows (also
   * those of waits that did not await it, and those whose removal failed and is queued), for `CLOSE_CLEANUP_MS` in
   * all, whatever the connections are doing; later acquisitions are refused with the same error.
   */
  async close(): Promise<void> {
    const until = Date.now() + CLOSE_CLEANUP_MS;
    this.closing.abort(new LockShutdownError());
    // A wait ends at once, but its last steps (releasing a grant that came as it ended, removing its rows) need the
    // database: they go on in the background past the bound, and their rows expire by themselves if they fail.
    await bounded(Promise.allSettled([...this.waits]), until, NEVER);
    await bounded(Promise.all([...this.cleanups]), until, NEVER);
    await this.leases.retries.drain(WAITER_KEY, until);
  }

  /** Counters since start. */
  stats(): LockStats {
    return { granted: this.granted, busy: this.busy, released: this.released, retries: this.store.retries };
  }
}
