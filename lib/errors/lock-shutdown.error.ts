import { LockWaitAbortedError } from './lock-wait-aborted.error.js';

/**
 * The application is shutting down (`app.close()`): every `tryLocks(..., { waitMs })` still waiting ends at once
 * with this error (a `LockWaitAbortedError`), holds nothing and leaves no waiter row; new waits are refused with it.
 * @publicApi
 */
export class LockShutdownError extends LockWaitAbortedError {
  constructor() {
    super(new Error('the application is shutting down'));
  }
}
