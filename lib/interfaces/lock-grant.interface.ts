import type { LockRequest } from './lock-spec.interface.js';

/** Statuses of a grant in the lock log. @publicApi */
export type LockLogStatus = 'ACQUIRED' | 'BUSINESS_DONE' | 'RELEASED' | 'REAPED' | 'RECOVERED';

/**
 * A grant that holds its locks now, as `LockService.getGrants()` reports it (times from the database clock).
 * @publicApi
 */
export interface LockGrant {
  readonly stamp: number;
  readonly appId: string;
  /** The process that took it (`instance` option). */
  readonly instance: string;
  readonly locks: readonly LockRequest[];
  readonly acquiredAt: Date;
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
  readonly stamp: number;
  readonly appId: string;
  readonly instance: string;
  readonly locks: readonly LockRequest[];
  readonly status: LockLogStatus;
  readonly acquiredAt: Date;
  readonly businessDoneAt: Date | null;
  /** When it was released, reaped or recovered. */
  readonly endedAt: Date | null;
}
