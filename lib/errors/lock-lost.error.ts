import { LockError } from './lock.error.js';

/**
 * The grant is gone or its lease has expired: it was reaped, recovered, or released. Thrown by `markBusinessDone`
 * inside your business transaction so that the transaction rolls back (seed 002), and used as the reason of a
 * grant's `AbortSignal`.
 * @publicApi
 */
export class LockLostError extends LockError {
  constructor(
    /** The stamp of the lost grant. */
    readonly stamp: number,
    /** Why it is known to be lost. */
    readonly reason: string,
  ) {
    super(`The locks of stamp ${stamp} are lost: ${reason}`);
  }
}
