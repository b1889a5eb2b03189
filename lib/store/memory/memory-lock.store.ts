import { setImmediate as nodeSetImmediate } from 'node:timers';
import type { LockRequest } from '../../interfaces/index.js';
import type { ResolvedLockOptions } from '../../utils/resolve-lock-options.util.js';
import { MODE_CODE } from '../lock-sql.constants.js';
import {
  LockStore,
  type BusyLock,
  type InstanceSession,
  type ListenerCallbacks,
  type LockListener,
  type RenewOutcome,
} from '../lock.store.js';
import { MemoryLockAdminStore } from './memory-lock-admin.store.js';
import type { InMemoryLockDatabase, MemoryLogRow, ModeCode } from './memory-lock.database.js';

/** Statuses of a grant that still holds its locks (`LIVE` of the SQL). */
const isLive = (row: MemoryLogRow | undefined): row is MemoryLogRow =>
  row?.status === 'ACQUIRED' || row?.status === 'BUSINESS_DONE';

/** How long an expired waiter row stays before the reaper deletes it (as `locking_reap` does). */
const EXPIRED_WAITERS_KEPT_MS = 60_000;

/**
 * Lets other callers run between two statements, as a round trip to a database does. Node's own `setImmediate`, not
 * the global one: a test's fake timers must not stop the store.
 */
const roundTrip = (): Promise<void> => new Promise((resolve) => nodeSetImmediate(resolve));

/**
 * `LockStore` over an `InMemoryLockDatabase`, for `LockTestingModule`: the decisions of the PostgreSQL functions
 * (`locking_try_acquire` and its siblings in `lib/migrations/sql/`), statement for statement. Each operation runs
 * whole between two turns of the event loop, as a database transaction serialised by its advisory locks does.
 * @internal
 */
export class MemoryLockStore extends LockStore {
  protected readonly reports: MemoryLockAdminStore;
  readonly retries = 0;

  constructor(
    private readonly db: InMemoryLockDatabase,
    private readonly options: ResolvedLockOptions,
  ) {
    super();
    this.reports = new MemoryLockAdminStore(db);
  }

  async tryAcquire(group: readonly LockRequest[], waiter?: string, leaseMs = this.options.grantLeaseMs): Promise<number> {
    await roundTrip();
    const { db } = this;
    if (group.some((request) => this.isBusy(request.name, MODE_CODE[request.mode], waiter))) return 0;
    const stamp = db.nextStamp();
    const now = db.now();
    for (const { name, mode } of group) db.locks.push({ name, mode: MODE_CODE[mode], appId: this.options.appId, stamp });
    db.log.set(stamp, {
      stamp,
      appId: this.options.appId,
      instance: this.options.instance,
      locks: group.map(({ name, mode }) => ({ name, mode })),
      status: 'ACQUIRED',
      acquired: now,
      leaseExpires: now + leaseMs,
      businessDone: null,
      ended: null,
      endedBy: null,
      endReason: null,
    });
    if (waiter !== undefined) db.deleteWaiters((row) => row.waiter === waiter);
    return stamp;
  }

  /**
   * `CHECK_NAME_IN_ORDER`: busy when its holders reach the permits in `mode` or hold the other mode; a request also
   * yields to a waiter that registered before its own position, a writer to any, a reader to a writer (a caller that
   * does not wait is behind every waiter), unless that waiter is blocked on another name of its group.
   */
  private isBusy(name: string, mode: ModeCode, waiter: string | undefined): boolean {
    const held = this.db.holders(name);
    if (held.length > 0) {
      if (held.some((row) => row.mode !== mode)) return true;
      if (held.length >= this.permitsOf(name, mode)) return true;
    }
    // Every waiter in one order: a write yields to any earlier waiter of the name, a read to an earlier writer.
    const now = this.db.now();
    const own = this.db.waiters.filter((row) => row.waiter === waiter).map((row) => row.seq);
    const position = own.length > 0 ? Math.min(...own) : Infinity;
    return this.db.waiters.some(
      (row) =>
        row.name === name &&
        (mode === 'W' || row.mode === 'W') &&
        row.expires > now &&
        row.seq < position &&
        !this.blockedElsewhere(row.waiter, name, now),
    );
  }

  /**
   * GRANTABLE_ONLY: whether another name of `waiter`'s group than `name` is held in a mode that conflicts with the
   * waiter's (a write with any holder, a read with a writer): yielding to that waiter would serve nobody.
   */
  private blockedElsewhere(waiter: string, name: string, now: number): boolean {
    return this.db.waiters.some(
      (row) =>
        row.waiter === waiter &&
        row.name !== name &&
        row.expires > now &&
        this.db.holders(row.name).some((held) => row.mode === 'W' || held.mode === 'W'),
    );
  }

  private permitsOf(name: string, mode: ModeCode): number {
    const { read, write } = this.options.defaultPermits;
    return this.db.permitsOf(name, mode) ?? (mode === 'W' ? write : read);
  }

  async registerWaiter(waiter: string, group: readonly LockRequest[], ttlMs: number): Promise<boolean> {
    await roundTrip();
    const { db } = this;
    const now = db.now();
    for (const { name, mode } of group) {
      const row = db.waiters.find((w) => w.name === name && w.waiter === waiter);
      if (row) row.expires = now + ttlMs;
      else {
        db.waiters.push({
          name,
          waiter,
          mode: MODE_CODE[mode],
          appId: this.options.appId,
          seq: db.nextWaiterSeq(),
          registered: now,
          expires: now + ttlMs,
        });
      }
    }
    return true; // no release hands a grant over here
  }

  async isWaiting(waiter: string): Promise<boolean> {
    await roundTrip();
    return this.db.waiters.some((row) => row.waiter === waiter);
  }

  async unregisterWaiter(waiter: string): Promise<number> {
    await roundTrip();
    const gone = this.db.deleteWaiters((row) => row.waiter === waiter);
    // A writer that leaves may let the readers that yielded to it in.
    this.db.notifyFreed(gone.filter((row) => row.mode === 'W').map((row) => row.name));
    return 0;
  }

  async busyLocks(group: readonly LockRequest[]): Promise<BusyLock[]> {
    await roundTrip();
    const now = this.db.now();
    const busy: BusyLock[] = [];
    for (const request of group) {
      const mode = MODE_CODE[request.mode];
      const held = this.db.holders(request.name);
      if (held.some((row) => row.mode !== mode) || held.length >= this.permitsOf(request.name, mode)) {
        busy.push({ request, reason: 'held' });
      } else if (
        mode === 'R' &&
        this.db.waiters.some((row) => row.name === request.name && row.mode === 'W' && row.expires > now)
      ) {
        busy.push({ request, reason: 'writer-waiting' });
      }
    }
    return busy.sort((a, b) => (a.request.name < b.request.name ? -1 : a.request.name > b.request.name ? 1 : 0));
  }

  async listen(callbacks: ListenerCallbacks): Promise<LockListener> {
    await roundTrip();
    return { close: this.db.listen(callbacks) };
  }

  async release(stamp: number): Promise<boolean> {
    await roundTrip();
    const row = this.db.log.get(stamp);
    if (!isLive(row) || row.appId !== this.options.appId) return false;
    this.end(row, 'RELEASED');
    return true;
  }

  /** Ends a live grant: its log row first, then its lock rows; the waiters of its names are woken. */
  private end(row: MemoryLogRow, status: MemoryLogRow['status']): void {
    row.status = status;
    row.ended = this.db.now();
    this.db.deleteLocks((lock) => lock.stamp === row.stamp);
    this.db.notifyFreed(row.locks.map((lock) => lock.name));
  }

  async recover(): Promise<number> {
    await roundTrip();
    const { db } = this;
    const { appId } = this.options;
    const now = db.now();
    for (const lock of db.locks) {
      const row = db.log.get(lock.stamp);
      if (lock.appId === appId && isLive(row)) Object.assign(row, { status: 'RECOVERED', ended: now });
    }
    db.deleteWaiters((row) => row.appId === appId);
    const freed = db.deleteLocks((lock) => lock.appId === appId);
    db.notifyFreed(freed.map((lock) => lock.name));
    return freed.length;
  }

  async renew(stamps: readonly number[], maxHoldMs = this.options.maxHoldMs): Promise<RenewOutcome> {
    await roundTrip();
    const now = this.db.now();
    const { leaseMs, appId } = this.options;
    const live = new Set<number>();
    for (const stamp of stamps) {
      const row = this.db.log.get(stamp);
      if (!isLive(row) || row.appId !== appId || row.leaseExpires <= now) continue;
      row.leaseExpires = maxHoldMs > 0 ? Math.min(now + leaseMs, row.acquired + maxHoldMs) : now + leaseMs;
      live.add(stamp);
    }
    // Nothing here holds a row the way a business transaction does: every live grant is renewed.
    return { renewed: live, live };
  }

  async reap(): Promise<number[]> {
    await roundTrip();
    const { db } = this;
    const now = db.now();
    const held = new Set(db.locks.map((lock) => lock.stamp));
    const stale = [...db.log.values()]
      .filter((row) => held.has(row.stamp) && isLive(row) && row.leaseExpires < now)
      .sort((a, b) => a.leaseExpires - b.leaseExpires)
      .slice(0, this.options.reaperBatchSize);
    for (const row of stale) this.end(row, 'REAPED');
    db.deleteWaiters((row) => row.expires < now - EXPIRED_WAITERS_KEPT_MS);
    return stale.map((row) => row.stamp);
  }

  async pruneLog(limit: number): Promise<number> {
    await roundTrip();
    const retention = this.options.logRetentionMs;
    if (retention === 0) return 0;
    const before = this.db.now() - retention;
    const old = [...this.db.log.values()].filter((row) => row.acquired < before && row.ended !== null && row.ended < before);
    for (const row of old.slice(0, limit)) this.db.log.delete(row.stamp);
    return Math.min(old.length, limit);
  }

  /**
   * ACQUIRED → BUSINESS_DONE while the grant is live, has its lock rows and its lease has not ended. The caller's
   * transaction (`_manager`) is on another database: the mark is checked here, just before its commit, but it is not
   * part of it (see docs/testing.md).
   */
  async markBusinessDone(stamp: number): Promise<boolean> {
    await roundTrip();
    const row = this.db.log.get(stamp);
    const now = this.db.now();
    if (!isLive(row) || row.appId !== this.options.appId || row.leaseExpires <= now) return false;
    if (!this.db.locks.some((lock) => lock.stamp === stamp)) return false;
    row.status = 'BUSINESS_DONE';
    row.businessDone = now;
    return true;
  }

  async claimAppId(): Promise<InstanceSession | undefined> {
    await roundTrip();
    const { appId, instance } = this.options;
    if (this.db.claims.get(appId)?.alive) return undefined;
    const claim = { pid: this.db.nextPid(), instance, alive: true };
    this.db.claims.set(appId, claim);
    const { claims } = this.db;
    return {
      get alive() {
        return claim.alive;
      },
      pid: claim.pid,
      close() {
        claim.alive = false;
        if (claims.get(appId) === claim) claims.delete(appId);
      },
    };
  }

  async recordInstance(processKey: string | null): Promise<string | null | undefined> {
    await roundTrip();
    const { appId, instance } = this.options;
    const previous = this.db.instances.get(appId);
    this.db.instances.set(appId, { instance, processKey, claimed: this.db.now() });
    return previous === undefined ? undefined : previous.processKey;
  }

  async retireInstances(limit: number): Promise<number> {
    await roundTrip();
    const retention = this.options.instanceRetentionMs;
    if (retention === 0) return 0;
    const { db } = this;
    const before = db.now() - retention;
    const retirable = [...db.instances]
      .filter(([appId, row]) => row.claimed < before && !db.claims.get(appId)?.alive)
      .filter(([appId]) => !db.locks.some((lock) => lock.appId === appId) && !db.waiters.some((w) => w.appId === appId))
      .sort(([, a], [, b]) => a.claimed - b.claimed)
      .slice(0, limit);
    for (const [appId] of retirable) db.instances.delete(appId);
    return retirable.length;
  }

  async appIdHolderPid(): Promise<number | undefined> {
    return this.db.claims.get(this.options.appId)?.pid;
  }

  async endStaleClaim(pid: number): Promise<void> {
    const claim = this.db.claims.get(this.options.appId);
    if (claim?.pid !== pid) return;
    claim.alive = false;
    this.db.claims.delete(this.options.appId);
  }

  async checkServer(): Promise<string[]> {
    return [];
  }

  async readOnlyReason(): Promise<string | undefined> {
    return undefined;
  }

  async describeAppIdHolder(): Promise<string> {
    const claim = this.db.claims.get(this.options.appId);
    return claim ? `instance "${claim.instance}" in this process (in-memory lock database)` : 'gone by now';
  }
}
