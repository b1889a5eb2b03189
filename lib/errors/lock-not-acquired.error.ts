import type { LockRequest } from '../interfaces/index.js';
import { LockError } from './lock.error.js';

/**
 * A `@WithLocks` method (or `LockService.withLocks`) could not take its group: some lock is held elsewhere. Nothing
 * was taken and the method did not run. `LockHttpInterceptor` turns it into HTTP 423 Locked.
 * @publicApi
 */
export class LockNotAcquiredError extends LockError {
  constructor(
    /** The locks that were asked for (those not already held by the calling chain). */
    readonly locks: readonly LockRequest[],
    /** The method, as `Class.method`. */
    readonly target: string,
    /** Seconds after which a retry makes sense, when the method declared it (`retryAfterSeconds`). */
    readonly retryAfterSeconds?: number,
  ) {
    super(`${target} did not run: locks not available: ${locks.map((l) => `${l.name} (${l.mode})`).join(', ')}`);
  }
}
