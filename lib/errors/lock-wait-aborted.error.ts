import { LockError } from './lock.error.js';

/**
 * A `tryLocks(..., { waitMs, signal })` wait was cancelled through its `AbortSignal`. Nothing is held and the
 * waiter left no row behind.
 * @publicApi
 */
export class LockWaitAbortedError extends LockError {
  constructor(
    /** The signal's reason. */
    readonly reason: unknown,
  ) {
    super(`Waiting for locks was aborted${reason instanceof Error ? `: ${reason.message}` : ''}`, { cause: reason });
  }
}
