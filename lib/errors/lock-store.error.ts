import { LockError } from './lock.error.js';

/**
 * The database could not complete a lock operation (connection lost, server shutting down, retries exhausted, …).
 * The driver's error is kept as `cause`; `code` is its SQLSTATE (PostgreSQL) or `ER_…` name (MySQL) when there is one.
 *
 * For an acquisition that failed this way the outcome is known to be "not granted" unless `outcomeUnknown` is true
 * (the connection broke after the statement was sent); such a grant, if it happened, is freed by `releaseAllLocks()`.
 * @publicApi
 */
export class LockStoreError extends LockError {
  constructor(
    /** The operation that failed, e.g. `tryLocks`. */
    readonly operation: string,
    /**
     * The database error's code: its SQLSTATE on PostgreSQL, its `ER_…` name on MySQL/MariaDB (`ER_LOCK_DEADLOCK`,
     * …), or the Node.js error code (`ECONNRESET`, …).
     */
    readonly code: string | undefined,
    /** True when the statement may have committed before the failure was seen. */
    readonly outcomeUnknown: boolean,
    cause: unknown,
  ) {
    super(`${operation} failed in the database${code ? ` (${code})` : ''}: ${messageOf(cause)}`, { cause });
  }
}

function messageOf(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}
