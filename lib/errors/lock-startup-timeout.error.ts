import { LockError } from './lock.error.js';

/**
 * The lock module could not start within `startupTimeoutMs`: the database did not answer, stayed read-only, or kept
 * ending the start-up's sessions for the whole budget. `cause` is the last failure.
 * @publicApi
 */
export class LockStartupTimeoutError extends LockError {
  constructor(
    /** The start-up budget that ran out (LockModule option `startupTimeoutMs`). */
    readonly timeoutMs: number,
    /** What start-up was waiting for, e.g. `the app id claim`. */
    readonly waitingFor: string,
    /** Tries made. */
    readonly attempts: number,
    cause: unknown,
  ) {
    super(
      `The lock module did not start within ${timeoutMs} ms (LockModule option startupTimeoutMs): ${waitingFor} ` +
        `failed ${attempts} time(s), last with: ${cause instanceof Error ? cause.message : String(cause)}. Make sure ` +
        'the database is up and writable, or raise startupTimeoutMs',
      { cause },
    );
  }
}
