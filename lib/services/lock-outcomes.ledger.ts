import type { LockRequest } from '../interfaces/index.js';
import type { LockStore } from '../store/lock.store.js';
import type { ResolvedLockOptions } from '../utils/resolve-lock-options.util.js';
import { LockLeases } from './lock-leases.service.js';

/**
 * How long a stamp returned to a caller is remembered (at least, and at least two leases): longer than an attempt can
 * stay in flight before its outcome is known, plus the clock skew tolerated between two database servers (a primary
 * and the standby promoted after it).
 */
const REMEMBER_MS = 60_000;
/** At most this many returned stamps are remembered (the oldest go first). */
const REMEMBER_MAX = 100_000;

/** A grant found for an attempt whose outcome was unknown. */
export interface ResolvedGrant {
  readonly stamp: number;
  /** When its lease started at the latest, on `LockLeases.now()`'s clock (for `LockLeases.track`). */
  readonly sentAt: number;
}

/**
 * The acquisition attempts of one `LockService` and the stamps they returned, to resolve an attempt whose outcome is
 * unknown (its connection broke after the statement was sent: a failover, a reset). A grant that landed without its
 * caller knowing is an orphan: a live grant of this app id and instance, of the same group, granted after the attempt
 * was sent, whose stamp no attempt returned and this process does not hold. Any orphan of the group serves the
 * caller as well as its own (same locks, same app id), and each is handed out once, so nothing is held twice. The
 * look is taken once every attempt that may have committed before it has answered, so that an attempt still in
 * flight cannot be granted the stamp that the look hands out.
 * @internal
 */
export class LockOutcomes {
  private readonly inFlight = new Set<Promise<unknown>>();
  /** Stamps returned to a caller (or handed out here), with `Date.now()` when they were. */
  private readonly returned = new Map<number, number>();

  constructor(
    private readonly store: LockStore,
    private readonly leases: LockLeases,
    private readonly options: ResolvedLockOptions,
  ) {}

  /** Follows one attempt: its stamp is remembered when it returns one. */
  track(attempt: Promise<number>): Promise<number> {
    const settled = attempt.then(
      (stamp) => void (stamp > 0 && this.remember(stamp)),
      () => undefined,
    );
    this.inFlight.add(settled);
    void settled.then(() => this.inFlight.delete(settled));
    return attempt;
  }

  /**
   * Looks for an orphan grant of `group` taken after `since` (`Date.now()` when the unknown attempt was sent) and
   * hands it out; undefined when there is none (nothing was granted: the caller may go on waiting). `leaseMs`: the
   * lease the attempt's grant started with.
   * @throws LockStoreError when the database does not answer (the caller looks again later).
   */
  async resolve(group: readonly LockRequest[], since: number, leaseMs: number): Promise<ResolvedGrant | undefined> {
    const { appId, instance } = this.options;
    const askedAt = LockLeases.now();
    const grants = await this.store.listGrants({ appId, name: group[0]?.name });
    const answeredAt = Date.now();
    // Every attempt that may have committed before the look answers: the stamps they return are not orphans.
    await Promise.all([...this.inFlight]);
    const wanted = group.map((r) => `${r.name}\n${r.mode}`).sort().join('\n\n');
    for (const grant of grants) {
      if (grant.instance !== instance || grant.leaseLeftMs <= 0) continue;
      if (answeredAt - grant.heldForMs < since) continue; // granted before the attempt was sent
      if (this.returned.has(grant.stamp) || this.leases.knows(grant.stamp)) continue;
      if (grant.locks.map((r) => `${r.name}\n${r.mode}`).sort().join('\n\n') !== wanted) continue;
      this.remember(grant.stamp);
      // Its lease, as the database counts it, ends no earlier than `leaseLeftMs` after the look was sent.
      return { stamp: grant.stamp, sentAt: askedAt + grant.leaseLeftMs - leaseMs };
    }
    return undefined;
  }

  private remember(stamp: number): void {
    const now = Date.now();
    this.returned.set(stamp, now);
    for (const [old, at] of this.returned) {
      if (at > now - Math.max(REMEMBER_MS, 2 * this.options.leaseMs) && this.returned.size <= REMEMBER_MAX) break;
      this.returned.delete(old);
    }
  }
}
