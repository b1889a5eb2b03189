/**
 * Options of `LockService.tryLocks`.
 * @publicApi
 */
export interface TryLocksOptions {
  /**
   * Wait up to this many milliseconds for the group: the call resolves with a stamp as soon as the whole group is
   * available (woken by the database's NOTIFY on release, reap and permits changes), or with 0 at the deadline.
   * An integer from 0 to 2147483647 (2^31 − 1 ms, about 24.8 days, the longest Node.js timer); larger values are
   * refused with `InvalidLockArgumentError`. For longer waits, pass an `AbortSignal` and wait again.
   * @default 0 (answer at once)
   */
  waitMs?: number;
  /** Cancels the wait: the call rejects with `LockWaitAbortedError` and holds nothing. */
  signal?: AbortSignal;
}
