import type { LockRequest } from './lock-spec.interface.js';

/**
 * Statuses of a grant in the lock log. `FORCED`: freed by `LockAdminService.forceRelease` (see `endedBy`, `endReason`).
 * @publicApi
 */
export type LockLogStatus = 'ACQUIRED' | 'BUSINESS_DONE' | 'RELEASED' | 'REAPED' | 'RECOVERED' | 'FORCED';

/**
 * A grant that holds its locks now, as `LockService.getGrants()` reports it (times from the database clock).
 * @publicApi
 */
export interface LockGrant {
  /** The grant's stamp, as `tryLocks` returned it. */
  readonly stamp: number;
  /** The `appId` of the instance that holds it. */
  readonly appId: string;
  /** The process that took it (`instance` option). */
  readonly instance: string;
  /** The locks of the group. */
  readonly locks: readonly LockRequest[];
  /** When it was granted (database clock). */
  readonly acquiredAt: Date;
  /** Milliseconds since it was granted (database clock). */
  readonly heldForMs: number;
  /** Milliseconds until the lease expires (negative once expired and not yet reaped). */
  readonly leaseLeftMs: number;
  /** The fencing token of every lock of the grant: its stamp (see `getFencingToken`). */
  readonly fencingToken: number;
}

/**
 * One row of the lock log (`locking_log`), as `LockService.getLog()` reports it.
 * @publicApi
 */
export interface LockLogEntry {
  /** The grant's stamp. */
  readonly stamp: number;
  /** The `appId` of the instance that took it. */
  readonly appId: string;
  /** The process that took it (`instance` option). */
  readonly instance: string;
  /** The locks of the group. */
  readonly locks: readonly LockRequest[];
  /** Where the grant is in its life: `ACQUIRED`, `BUSINESS_DONE`, then `RELEASED`, `REAPED`, `RECOVERED` or `FORCED`. */
  readonly status: LockLogStatus;
  /** When it was granted (database clock). */
  readonly acquiredAt: Date;
  /** When `markBusinessDone` recorded it, if it did. */
  readonly businessDoneAt: Date | null;
  /** When it was released, reaped, recovered or forced. */
  readonly endedAt: Date | null;
  /** Who forced its release (`FORCED` only): the admin's `actor`. */
  readonly endedBy?: string;
  /** Why its release was forced (`FORCED` only). */
  readonly endReason?: string;
}
