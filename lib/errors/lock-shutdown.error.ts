import { LockWaitAbortedError } from './lock-wait-aborted.error.js';

/**
 * The application is shutting down (`app.close()`): every `tryLocks(..., { waitMs })` still waiting ends at once
 * with this error (a `LockWaitAbortedError`), holds nothing and leaves no waiter row; new waits are refused with it.
 *
 * It is also the reason of an `acquireLocks` handle's `signal` when `close()` begins while the handle is in use (its
 * locks are still held: finish and release; `shutdownGraceMs` bounds the wait), and the error of a subscription of a
 * locked Observable that the shutdown ended when `shutdownGraceMs` was over (after its release).
 * @publicApi
 */
export class LockShutdownError extends LockWaitAbortedError {
  constructor() {
    super(new Error('the application is shutting down'));
  }
}
