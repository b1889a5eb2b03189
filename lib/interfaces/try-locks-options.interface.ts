/**
 * Options of `LockService.tryLocks`.
 * @publicApi
 */
export interface TryLocksOptions {
  /**
   * Wait up to this many milliseconds for the group: the call resolves with a stamp as soon as the whole group is
   * available (woken by the database's NOTIFY on release, reap and permits changes), or with 0 at the deadline.
   * @default 0 (answer at once)
   */
  waitMs?: number;
  /** Cancels the wait: the call rejects with `LockWaitAbortedError` and holds nothing. */
  signal?: AbortSignal;
}
