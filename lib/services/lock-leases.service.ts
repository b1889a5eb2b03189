import { grantEndReason } from '../errors/grant-end.util.js';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { LockLostError } from '../errors/index.js';
import type { LockLogEntry } from '../interfaces/index.js';
import { RESOLVED_LOCK_OPTIONS } from '../lock.constants.js';
import { LockStore, type RenewOutcome } from '../store/lock.store.js';
import { LockTelemetry } from '../telemetry/lock-telemetry.service.js';
import type { ResolvedLockOptions } from '../utils/resolve-lock-options.util.js';
import { awaitsCommit, type CommitOutcome, type HeldGrant, isOver } from './held-grant.state.js';
import { LockReleaseRetries } from './lock-release-retries.js';

/** The key of a stamp's release in `LockLeases.retries`. */
const releaseKey = (stamp: number) => `release:${stamp}`;

/** The key of the renewal in `LockLeases.retries`, while renewals fail. */
const RENEWAL_KEY = 'renewal';

/** How long the log row of a grant found gone is waited for, to say why in the error (a generic reason after). */
const GONE_REASON_WAIT_MS = 1000;

/**
 * How many lost grants' reasons (for the fence's error), and how many ended grants whose holder was told (until it
 * releases them), are remembered; the oldest forgotten first.
 */
const LOSS_REASONS_KEPT = 256;

/** How far the monotonic deadline may be ahead of the wall clock's before an expiry is put down to a suspend. */
const WALL_CLOCK_SLACK_MS = 100;

/**
 * The grants this process holds, and what it knows of their leases.
 * - The renewal task extends every lease in one statement. A grant the renewal no longer finds (reaped, recovered,
 *   lease ended) is lost; a grant whose row another transaction has locked (a business transaction after
 *   `markBusinessDone`) is simply not extended this time.
 * - A watchdog on the monotonic clock marks a grant lost once `leaseMs` have passed since its last renewal (or its
 *   acquisition) was sent without a renewal succeeding since: the database's lease started after that moment, so the
 *   holder is told before anybody else can be granted, whatever the database or the network does. With `maxHoldMs`,
 *   it also marks it lost `maxHoldMs` after its acquisition was sent: the renewals stop extending the lease at
 *   `maxHoldMs` after the database's (later) acquisition time. A leader's grant (tracked `unbounded`) has no such
 *   limit: its lease is renewed for as long as this process renews (a second renewal statement, sent only while such
 *   a grant and a bounded one are held together).
 * - A renewal that failed is made again as soon as the database answers (`retries`: from a few milliseconds after the
 *   failure, backing off to a quarter of a second), not at the next tick: after an outage that began just after a
 *   tick, the next tick can come past the leases' end, which an outage shorter than the lease must not cost.
 * - A release that failed is not renewed any more and is made again as soon as the database answers (`retries`,
 *   likewise, and on every renewal tick); if the database stays away, the lease ends and any reaper frees it.
 * @internal
 */
@Injectable()
export class LockLeases {
  private readonly logger = new Logger('LockModule');
  private readonly held = new Map<number, HeldGrant>();
  /** The releases that failed (and the waiter clean-ups of `LockAcquisitions`), made again until they succeed. */
  readonly retries = new LockReleaseRetries();
  private watchdog?: NodeJS.Timeout;
  /** The timers of `renewEarly`. */
  private readonly earlyRenewals = new Set<NodeJS.Timeout>();
  private watchdogAt = Infinity;
  /** When the first of the renewals failing since the last success was sent (monotonic clock); none failing: undefined. */
  private failingSince?: number;
  /** Why recently lost grants were lost, by stamp (bounded: `LOSS_REASONS_KEPT`). */
  private readonly lossReasons = new Map<number, string>();
  /**
   * Grants whose holder knows they ended, until it releases them: a fenced call threw it `LockLostError`, or their
   * fenced transaction committed before they ended (bounded: `LOSS_REASONS_KEPT`).
   */
  private readonly toldEnds = new Set<number>();

  constructor(
    @Inject(LockStore) private readonly store: LockStore,
    @Inject(RESOLVED_LOCK_OPTIONS) private readonly options: ResolvedLockOptions,
    private readonly telemetry: LockTelemetry,
  ) {}

  /** How many grants this process holds (for the metrics). */
  get size(): number {
    return this.held.size;
  }

  /** Now, on the clock that leases are counted on here. */
  static now(): number {
    return performance.now();
  }

  /** Now on the wall clock, which goes on while the machine is suspended. */
  static wallNow(): number {
    return Date.now();
  }

  /**
   * The lease a new grant starts with: `grantLeaseMs`, or `leaseMs` for a grant that `maxHoldMs` does not bound (a
   * leader's, see `track`).
   */
  startLeaseMs(unbounded: boolean): number {
    return unbounded ? this.options.leaseMs : this.options.grantLeaseMs;
  }

  /**
   * Starts tracking a new grant whose acquisition was sent at `sentAt` (`LockLeases.now()`). `unbounded`: a leader's
   * grant, which `maxHoldMs` does not bound (acquired with a lease of `startLeaseMs(true)`); it is held for as long as
   * its renewals succeed. `handedOverLeaseMs`: a grant a release handed over, whose lease (that long from `sentAt`)
   * is shorter than a grant's (see `LockAcquisitions`): it is renewed once half of it has passed, if still held, not
   * at the next renewal tick.
   */
  track(stamp: number, sentAt: number, unbounded: boolean, handedOverLeaseMs?: number): void {
    const maxHoldMs = unbounded ? 0 : this.options.maxHoldMs;
    const leaseMs = handedOverLeaseMs ?? this.startLeaseMs(unbounded);
    const holdDeadline = maxHoldMs > 0 ? sentAt + maxHoldMs : Infinity;
    const deadline = sentAt + leaseMs;
    // The wall clock when the acquisition was sent: read now, shifted back by the time since (monotonic).
    const wallSentAt = LockLeases.wallNow() - (LockLeases.now() - sentAt);
    const wallDeadline = wallSentAt + leaseMs;
    const wallHoldDeadline = maxHoldMs > 0 ? wallSentAt + maxHoldMs : Infinity;
    this.held.set(stamp, {
      deadline,
      holdDeadline,
      wallDeadline,
      wallHoldDeadline,
      unbounded,
      controller: null,
      releasing: false,
      committing: 0,
      committed: false,
    });
    if (deadline < this.watchdogAt) this.armWatchdog(deadline);
    if (handedOverLeaseMs !== undefined) this.renewEarly(stamp, sentAt + leaseMs / 2);
  }

  /** Renews every lease at `at` (`LockLeases.now()`) if `stamp` is still held then (a short lease, see `track`). */
  private renewEarly(stamp: number, at: number): void {
    const timer = setTimeout(() => {
      this.earlyRenewals.delete(timer);
      // A failure is made again as soon as the database answers (see `renew`); the watchdog tells the holder first.
      if (this.held.get(stamp)?.releasing === false) this.renew().catch(() => undefined);
    }, Math.max(0, at - LockLeases.now()));
    timer.unref();
    this.earlyRenewals.add(timer);
  }

  /** Marks a grant whose release is being sent (it stays held until the release answers). */
  beginRelease(stamp: number): void {
    const grant = this.held.get(stamp);
    if (grant) grant.releasing = true;
  }

  /** Stops tracking a released grant (its signal stays as it is). */
  forget(stamp: number): void {
    this.held.delete(stamp);
    this.toldEnds.delete(stamp);
  }

  /** The holder of `stamp` was told it is lost (a fenced call threw it `LockLostError`): its release will be quiet. */
  markTold(stamp: number): void {
    this.toldEnds.add(stamp);
    if (this.toldEnds.size > LOSS_REASONS_KEPT) this.toldEnds.delete(this.toldEnds.values().next().value!);
  }

  /**
   * Whether the holder of `stamp`, which its release found gone, already knows the grant ended (its fenced transaction
   * committed, or a fenced call threw it `LockLostError`), so that the release has nothing to report;
   * either way the release ends what this process remembers of it, and a second release is refused.
   */
  endWasTold(stamp: number): boolean {
    const told = this.held.get(stamp)?.committed === true || this.toldEnds.has(stamp);
    this.toldEnds.delete(stamp);
    return told;
  }

  /**
   * Stops renewing a grant whose release failed, and releases it again as soon as the database answers; a grant then
   * found gone (released after all, reaped) is done.
   */
  releaseLater(stamp: number): void {
    this.held.delete(stamp);
    this.retries.add(releaseKey(stamp), () => this.store.release(stamp));
  }

  /** Whether this process still holds `stamp` as far as it knows: renewed in time, never found gone. */
  isHeld(stamp: number): boolean {
    return this.current(stamp) !== undefined;
  }

  /** Whether `stamp` is a grant of this process: held (even past its deadline) or being released. */
  knows(stamp: number): boolean {
    return this.held.has(stamp) || this.retries.has(releaseKey(stamp));
  }

  /** The grant's signal; an already aborted one for a stamp this process does not hold. */
  signal(stamp: number): AbortSignal {
    const grant = this.current(stamp);
    if (!grant) return AbortSignal.abort(new LockLostError(stamp, 'not held by this process'));
    grant.controller ??= new AbortController();
    return grant.controller.signal;
  }

  /**
   * A fenced transaction relying on `stamps` is about to send business done: until `commitEnded`, their lease expiry
   * (the watchdog, a renewal that no longer finds them live) waits for the outcome of its COMMIT. Business done locks
   * each grant's log row (or its lock rows above READ COMMITTED) until the transaction ends, and every end of a grant
   * (reaper, release, recovery, forced release) waits for, or skips, that lock: nobody else can be granted meanwhile.
   * Business done itself checks the lease on the database's clock, so a statement delayed past the lease fails.
   */
  awaitCommit(stamps: readonly number[]): void {
    for (const stamp of stamps) {
      const grant = this.held.get(stamp);
      if (grant) grant.committing++;
    }
  }

  /**
   * The fenced commit relying on `stamps` ended. Committed: the grants in `releasing` (released next by the caller) are
   * never declared lost any more (the holder's one outcome is the commit); the others (reused from an outer call)
   * are watched again. Failed: every grant is watched again, and one whose lease ended while the commit was in flight
   * is lost now, with `failure` in its reason.
   */
  commitEnded(stamps: readonly number[], outcome: CommitOutcome): void {
    for (const stamp of stamps) {
      const grant = this.held.get(stamp);
      if (!grant) continue;
      grant.committing = Math.max(0, grant.committing - 1);
      if (outcome.committed && outcome.releasing.has(stamp)) grant.committed = true;
      if (grant.committed || grant.committing > 0) continue;
      const loss = grant.pendingLoss ?? (isOver(grant, LockLeases.now(), LockLeases.wallNow()) ? this.expiredReason(grant) : undefined);
      if (loss === undefined) continue;
      const commit = outcome.committed
        ? 'the fenced commit relying on it succeeded, and then'
        : `the fenced commit relying on it failed (${outcome.failure}), and`;
      this.lose(stamp, `${commit} ${loss}`);
    }
    this.checkDeadlines();
  }

  /** Marks one grant lost. */
  lose(stamp: number, reason: string): void {
    const grant = this.held.get(stamp);
    if (!grant) return;
    if (grant.committing > 0) {
      grant.pendingLoss ??= reason; // the commit's outcome decides (see commitEnded)
      return;
    }
    this.held.delete(stamp);
    if (grant.committed) {
      // Its fenced transaction committed: that is the holder's outcome, whatever happens to the grant before its release.
      this.markTold(stamp);
      this.logger.warn(`Locks of stamp ${stamp} ended after their fenced transaction committed: ${reason}`);
      return;
    }
    this.telemetry.lost(stamp);
    this.lossReasons.set(stamp, reason);
    if (this.lossReasons.size > LOSS_REASONS_KEPT) this.lossReasons.delete(this.lossReasons.keys().next().value!);
    this.logger.error(`Locks of stamp ${stamp} lost: ${reason}`);
    grant.controller?.abort(new LockLostError(stamp, reason));
  }

  /** Why this process found `stamp` lost (the reason its signal fired with), while it remembers. */
  lossReason(stamp: number): string | undefined {
    return this.lossReasons.get(stamp);
  }

  /** Marks every grant lost (recovery ran, or the instance lost its app id). */
  loseAll(reason: string): void {
    for (const stamp of [...this.held.keys()]) this.lose(stamp, reason);
  }

  /** For how long renewals have been failing (0 while they succeed, or when there is nothing to renew). */
  renewalFailingForMs(): number {
    return this.failingSince === undefined ? 0 : LockLeases.now() - this.failingSince;
  }

  /**
   * Extends every lease in one statement (two while grants that `maxHoldMs` bounds and grants it does not, leaders',
   * are held together); grants that are gone are lost.
   */
  async renew(): Promise<void> {
    const stamps = [...this.held.keys()];
    if (stamps.length === 0) {
      this.failingSince = undefined; // nothing to renew: nothing fails
      return;
    }
    // After a suspend, the watchdog's timer (monotonic) has not fired yet: the wall clock tells first.
    this.checkDeadlines();
    const sentAt = LockLeases.now();
    const wallSentAt = LockLeases.wallNow();
    let outcome: RenewOutcome;
    try {
      outcome = await this.renewAll(stamps);
    } catch (error) {
      this.failingSince ??= sentAt;
      this.retries.add(RENEWAL_KEY, () => this.renew());
      throw error;
    }
    this.failingSince = undefined;
    const { renewed, live } = outcome;
    const gone: number[] = [];
    for (const stamp of stamps) {
      const grant = this.held.get(stamp);
      // A stamp released (or lost) while the renewal was in flight is no longer tracked, or is being released: a
      // renewal that does not find it then saw the release.
      if (!grant) continue;
      if (renewed.has(stamp)) {
        grant.deadline = Math.min(sentAt + this.options.leaseMs, grant.holdDeadline);
        grant.wallDeadline = Math.min(wallSentAt + this.options.leaseMs, grant.wallHoldDeadline);
      }
      else if (!live.has(stamp) && !grant.releasing) gone.push(stamp);
    }
    // Rare: the log says how each one ended (forced by whom and why, reaped, recovered), read before telling the holder.
    const reasons = await Promise.all(gone.map((stamp) => this.goneReason(stamp)));
    gone.forEach((stamp, i) => {
      if (this.held.get(stamp)?.releasing === false) this.lose(stamp, reasons[i]!);
    });
  }

  /**
   * Renews `stamps`: their leases capped at `maxHoldMs` after their acquisition, but for leaders' grants (`unbounded`),
   * renewed with no cap (a second statement, only while both kinds are held).
   */
  private async renewAll(stamps: readonly number[]): Promise<RenewOutcome> {
    if (this.options.maxHoldMs === 0) return this.store.renew(stamps);
    // A stamp lost meanwhile (no longer held) goes with the bounded ones: whatever the renewal does to it is ignored.
    const unbounded = stamps.filter((stamp) => this.held.get(stamp)?.unbounded === true);
    if (unbounded.length === 0) return this.store.renew(stamps);
    if (unbounded.length === stamps.length) return this.store.renew(stamps, 0);
    const bounded = stamps.filter((stamp) => this.held.get(stamp)?.unbounded !== true);
    const outcomes = await Promise.all([this.store.renew(bounded), this.store.renew(unbounded, 0)]);
    return {
      renewed: new Set(outcomes.flatMap((outcome) => [...outcome.renewed])),
      live: new Set(outcomes.flatMap((outcome) => [...outcome.live])),
    };
  }

  /**
   * Why `stamp`, which a statement (a renewal, a release, business done) no longer found live, is gone: read from its
   * log row (see `grantEndReason`); a generic reason when the row cannot be read.
   */
  async goneReason(stamp: number): Promise<string> {
    const entry = await this.logEntryWithin(stamp);
    if (entry === null) return 'it was reaped, recovered, released or forced, or its lease ended (the lock log could not be read)';
    return grantEndReason(entry, this.options.appId);
  }

  /**
   * Whether the log row of `stamp` says the grant is live (acquired or business done, not ended); false when it cannot
   * be read in time.
   */
  async isLiveInDatabase(stamp: number): Promise<boolean> {
    const entry = await this.logEntryWithin(stamp);
    return !!entry && entry.endedAt === null && (entry.status === 'ACQUIRED' || entry.status === 'BUSINESS_DONE');
  }

  /** Whether the log of `stamp` says its grant ended (or has no row); false too when it cannot be read in time. */
  async isEndedInDatabase(stamp: number): Promise<boolean> {
    const entry = await this.logEntryWithin(stamp);
    return entry !== null && (entry === undefined || entry.endedAt !== null || !(entry.status === 'ACQUIRED' || entry.status === 'BUSINESS_DONE'));
  }

  /** The log row of `stamp` (undefined: none); null when it cannot be read within `GONE_REASON_WAIT_MS`. */
  private async logEntryWithin(stamp: number): Promise<LockLogEntry | undefined | null> {
    let timer: NodeJS.Timeout | undefined;
    // Bounded: the fence asks from inside a transaction, which may hold the pool's last connection.
    const entry = await Promise.race([
      this.store.logEntry(stamp).catch(() => null),
      new Promise<null>((resolve) => {
        timer = setTimeout(() => resolve(null), GONE_REASON_WAIT_MS);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
    return entry;
  }

  /** The renewal tick's backstop: makes every failed release (and waiter clean-up) again now. */
  retryReleases(): Promise<void> {
    return this.retries.runNow();
  }

  /** The stamps this process holds. */
  stamps(): number[] {
    return [...this.held.keys()];
  }

  /** Stops the watchdog and the retries of failed clean-ups, at the very end of shutdown (nothing is held any more). */
  stop(): void {
    this.retries.stop();
    for (const timer of this.earlyRenewals) clearTimeout(timer);
    this.earlyRenewals.clear();
    clearTimeout(this.watchdog);
    this.watchdogAt = Infinity;
  }

  /** The grant if it is held and its deadline has not passed (then it is lost now, whatever the timer does). */
  private current(stamp: number): HeldGrant | undefined {
    const grant = this.held.get(stamp);
    if (grant && !awaitsCommit(grant) && isOver(grant, LockLeases.now(), LockLeases.wallNow())) {
      this.lose(stamp, this.expiredReason(grant));
      return undefined;
    }
    return grant;
  }

  private armWatchdog(at: number): void {
    clearTimeout(this.watchdog);
    this.watchdogAt = at;
    this.watchdog = setTimeout(() => this.checkDeadlines(), Math.max(0, at - LockLeases.now()));
    this.watchdog.unref(); // a lease never keeps the process alive
  }

  /** Loses every grant whose deadline has passed, then waits for the next deadline. */
  private checkDeadlines(): void {
    this.watchdogAt = Infinity;
    const now = LockLeases.now();
    const wallNow = LockLeases.wallNow();
    let next = Infinity;
    for (const [stamp, grant] of this.held) {
      if (awaitsCommit(grant)) continue; // commitEnded checks it again (lose would only defer it)
      if (isOver(grant, now, wallNow)) this.lose(stamp, this.expiredReason(grant));
      else next = Math.min(next, grant.deadline);
    }
    if (next < Infinity) this.armWatchdog(next);
  }

  private expiredReason(grant: HeldGrant): string {
    if (grant.deadline > LockLeases.now() + WALL_CLOCK_SLACK_MS) {
      return `the wall clock passed its lease end while this process's monotonic clock did not (a suspended machine?): it may have been reaped`;
    }
    if (grant.deadline >= grant.holdDeadline) {
      return `it was held for maxHoldMs (${this.options.maxHoldMs} ms): its lease ends, and any reaper frees it`;
    }
    return `no renewal succeeded within its lease (${this.options.leaseMs} ms): it may have been reaped`;
  }
}
