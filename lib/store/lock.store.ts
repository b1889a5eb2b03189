import type { EntityManager } from 'typeorm';
import type { LockGrant, LockGrantFilter, LockLogEntry, LockMode, LockRequest } from '../interfaces/index.js';
import type { LockAdminStore } from './lock-admin.store.js';

/** A lock of a group that is not available now: held elsewhere, or a read yielding to a waiting writer. @internal */
export interface BusyLock {
  readonly request: LockRequest;
  readonly reason: 'held' | 'writer-waiting';
  /** The mode the name is held in now (by other grants), when it is held. */
  readonly heldFor?: LockMode;
}

/** One row of `locking_permissions`, in the library's vocabulary. @internal */
export interface PermitsRow {
  readonly name: string;
  readonly mode: 'read' | 'write';
  readonly permits: number;
}

/** What one renewal found. @internal */
export interface RenewOutcome {
  /** Stamps whose lease was extended by the renewal. */
  readonly renewed: ReadonlySet<number>;
  /** Stamps still held with a lease that has not ended: the renewed ones, and those locked by another transaction. */
  readonly live: ReadonlySet<number>;
}

/** A session kept open for the life of the instance (it holds the instance lock). @internal */
export interface InstanceSession {
  /** False once the connection broke: the instance lock is gone with it (unless the server has not noticed yet). */
  readonly alive: boolean;
  /** The pid of the session's server process, to end it if the server still runs it after this side gave it up. */
  readonly pid: number;
  /** Closes the connection (which frees the instance lock). */
  close(): void;
  /**
   * Where the instance lock alone does not hold across the database's servers (a Galera cluster: `GET_LOCK` is the
   * node's own), renews the claim's lease (on every renewal tick); `alive` is false afterwards when another instance
   * has taken the claim. Absent elsewhere.
   */
  keep?(): Promise<void>;
}

/** The listening session of this process (LISTEN on the lock channel). @internal */
export interface LockListener {
  /** Stops listening and closes the connection. */
  close(): void;
}

/** What `listen` reports: the names freed by a release or reap, `'*'` for "anything may have changed", or a loss. */
export interface ListenerCallbacks {
  readonly freed: (names: readonly string[] | '*') => void;
  /**
   * A release handed `stamp` to the waiter `waiter` (committed): the grant is that waiter's, and its lease ends when
   * the waiter's rows did, at `rowsEndMs` (database time, epoch ms), the end a refused attempt of the waiter answered.
   */
  readonly handedOver: (waiter: string, stamp: number, rowsEndMs: number) => void;
  /** The connection broke: notifications may have been missed. */
  readonly lost: () => void;
}

/**
 * The storage port of the lock engine, bound to one `appId`: each call is a short transaction of its own, never part
 * of a caller's transaction (except `markBusinessDone`, which is meant to be). `PostgresLockStore` and
 * `MysqlLockStore` implement it; the class doubles as the injection token.
 * @internal
 */
export abstract class LockStore {
  /**
   * Takes the whole group or nothing; returns the stamp, or 0 when some lock is not available. `waiter` identifies
   * a waiting caller (its own waiter rows do not make it yield); `leaseMs` is the lease the grant starts with
   * (`grantLeaseMs` when omitted).
   */
  abstract tryAcquire(group: readonly LockRequest[], waiter?: string, leaseMs?: number): Promise<number>;
  /**
   * Whether a waiter's refused attempt (`tryAcquire` with `waiter`) registers or refreshes its rows itself, for
   * `waitRecheckMs` x 3, in the same statement: its wait then sends no `registerWaiter`, and such an attempt answers
   * minus the rows' new end (epoch ms, database time) instead of 0. May turn false after a call (a schema without it).
   */
  get registersWaiters(): boolean {
    return false;
  }
  /**
   * Registers (or refreshes) a waiter on the group's names for `ttlMs`. False when its rows were not refreshed: a
   * release has handed it a grant (`ListenerCallbacks.handedOver`), whose lease ends when the rows did then.
   */
  abstract registerWaiter(waiter: string, group: readonly LockRequest[], ttlMs: number): Promise<boolean>;
  /** Removes a waiter's rows; the stamp a release handed it meanwhile (now the caller's to release), or 0. */
  abstract unregisterWaiter(waiter: string): Promise<number>;
  /**
   * Whether `waiter` still has rows. An acquisition that grants a waiter removes its rows in the same commit, so rows
   * still there prove that an attempt whose answer was lost (a failover, a dropped connection) granted nothing.
   */
  abstract isWaiting(waiter: string): Promise<boolean>;
  /** Which locks of `group` are not available now, and why (a snapshot, for log lines). */
  abstract busyLocks(group: readonly LockRequest[]): Promise<BusyLock[]>;
  /** Opens the process's listening session. */
  abstract listen(callbacks: ListenerCallbacks): Promise<LockListener>;
  /** Deletes this app's rows of `stamp` and logs RELEASED; false when none matched. */
  abstract release(stamp: number): Promise<boolean>;
  /** Start-up recovery: frees every lock of this app, logs RECOVERED; returns the lock rows freed. */
  abstract recover(): Promise<number>;
  /**
   * Extends the leases of `stamps` that are held and not locked by another transaction, never past `maxHoldMs` after
   * their acquisition (0: no limit; the module's `maxHoldMs` when omitted).
   */
  abstract renew(stamps: readonly number[], maxHoldMs?: number): Promise<RenewOutcome>;
  /** Frees one batch of stale grants (any app); returns their stamps. */
  abstract reap(): Promise<number[]>;
  /** Deletes up to `limit` ended log rows older than the retention (rows another instance is deleting are skipped); returns how many. */
  abstract pruneLog(limit: number): Promise<number>;
  /**
   * Deletes up to `limit` rows of `locking_instances` whose instance is gone (its app id's instance lock not held),
   * with no grant and no waiter, recorded longer than `instanceRetentionMs` ago (each checked again as it is deleted);
   * returns how many.
   */
  abstract retireInstances(limit: number): Promise<number>;
  /** ACQUIRED → BUSINESS_DONE inside the caller's transaction; false when the grant is gone or expired. */
  abstract markBusinessDone(stamp: number, manager: EntityManager): Promise<boolean>;
  /** Opens the instance session and takes the instance lock on this app id; undefined when a live twin holds it. */
  abstract claimAppId(): Promise<InstanceSession | undefined>;
  /**
   * Records this process (its `processKey`, or null where it has none) as the holder of the app id, called while it
   * holds the instance lock; returns the key the previous holder recorded (null: it had none), undefined when no
   * process ever recorded one.
   */
  abstract recordInstance(processKey: string | null): Promise<string | null | undefined>;
  /** The pid of the server process holding this app id's instance lock; undefined when nobody holds it. */
  abstract appIdHolderPid(): Promise<number | undefined>;
  /**
   * Ends the server process `pid` if it holds this app id's instance lock (a session this process gave up: stalled,
   * or still exiting), waiting up to a second for it to exit.
   */
  abstract endStaleClaim(pid: number): Promise<void>;
  /**
   * What the server's settings or the lock user's privileges keep the library from doing, each naming what to change
   * (checked at start-up, which then refuses, and by the health check); empty when nothing.
   * @param connectWithinMs how long a connection the check opens may take (start-up gives what is left of its
   *   budget); `queryTimeoutMs` when not given, or when longer.
   */
  abstract checkServer(connectWithinMs?: number): Promise<string[]>;
  /**
   * Why the server the pool reaches may not write now (a standby, a demoted primary: `read_only`,
   * `default_transaction_read_only`), undefined when it may.
   */
  abstract readOnlyReason(): Promise<string | undefined>;
  /** Describes the session holding this app id's instance lock. */
  abstract describeAppIdHolder(): Promise<string>;
  /** The reports and permits statements of the same dialect, which no `appId` binds. */
  protected abstract readonly reports: LockAdminStore;

  /** The live grants of every app (narrowed by `filter`). */
  listGrants(filter?: LockGrantFilter): Promise<LockGrant[]> {
    return this.reports.listGrants(filter);
  }

  /** The newest log rows. */
  listLog(limit: number): Promise<LockLogEntry[]> {
    return this.reports.listLog({ limit });
  }

  /** The log row of `stamp` (how a grant ended), undefined when pruned. */
  async logEntry(stamp: number): Promise<LockLogEntry | undefined> {
    return (await this.reports.listLog({ limit: 1, stamp }))[0];
  }

  /** Reads every permits row. */
  loadPermits(): Promise<PermitsRow[]> {
    return this.reports.loadPermits();
  }

  /** Writes (or, with `null`, deletes) one permits row. */
  savePermits(name: string, mode: 'read' | 'write', permits: number | null): Promise<void> {
    return this.reports.savePermits(name, mode, permits);
  }
  /** Round trips repeated after a transient failure since start. */
  abstract readonly retries: number;
}
