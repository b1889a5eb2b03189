/**
 * Counters of one `LockService` since it started.
 * @publicApi
 */
export interface LockStats {
  /** Groups granted by `tryLocks`. */
  readonly granted: number;
  /** `tryLocks` calls that returned 0 because some lock was not available. */
  readonly busy: number;
  /** Successful `releaseLocks` calls. */
  readonly released: number;
  /** Database round trips repeated after a transient failure. */
  readonly retries: number;
}
